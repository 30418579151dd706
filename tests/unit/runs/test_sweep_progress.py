"""A sweep says each point: a line as it starts and ends in a log, a live line
while it runs on a terminal, then the same closing line."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from infermeter.runs.endpoint_sweep import _telling
from infermeter.runs.load import LoadSpec


def _run(spec: LoadSpec) -> Any:
    metrics = SimpleNamespace(
        completed=8, failed=0, unanswered=0, system_tps=120.0, ttft_p90_ms=55.0
    )
    return SimpleNamespace(metrics=metrics)


def test_off_a_terminal_each_point_is_a_line_as_it_starts_and_ends() -> None:
    notes: list[str] = []
    run = _telling(_run, notes.append, 2, None)
    run(LoadSpec(mode="concurrency", concurrency=4, duration_s=10.0))
    assert notes[0] == "point 1 of 2: concurrency 4: running"
    assert notes[1].startswith(
        "point 1 of 2: concurrency 4: 8 completed, 0 failed, 120.0 tokens/s, "
        "TTFT p90 55 ms"
    )


def test_on_a_terminal_the_running_point_is_a_live_line() -> None:
    notes: list[str] = []
    shown: list[tuple[str, float | None]] = []

    @contextlib.contextmanager
    def live(text: str, expected_s: float | None) -> Iterator[None]:
        shown.append((text, expected_s))
        yield

    run = _telling(_run, notes.append, 0, live)  # a search: no count of points
    run(LoadSpec(mode="rate", rate=5.0, duration_s=10.0))
    run(LoadSpec(mode="rate", rate=10.0, requests=40))
    assert shown == [("point 1: 5 requests/s", 10.0), ("point 2: 10 requests/s", None)]
    assert [n.split(":")[0] for n in notes] == ["point 1", "point 2"]  # the ends
    assert all("running" not in n for n in notes)
