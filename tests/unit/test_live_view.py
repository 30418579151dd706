"""The live view on a terminal: the figures so far, the line, the bar, the wiring."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import numpy as np
from rich.console import Console

from infermeter.cli.live_view import LiveView, live_line, progress_bar
from infermeter.cli.render import ProgressLines
from infermeter.loadgen.live import LiveFigures, live_figures
from infermeter.loadgen.records import Records

MS = 1_000_000


def _phase(n: int = 10) -> Any:
    """A phase of ``n`` one-sample queries scheduled 100 ms apart from t=1 s."""
    records = Records.allocate(n, tokens=True)
    origin = 1_000 * MS + np.arange(n, dtype=np.int64) * 100 * MS
    schedule = SimpleNamespace(samples_per_query=1, query_offsets=None)
    return SimpleNamespace(
        schedule=schedule,
        records=records,
        sink=SimpleNamespace(issued=n),
        origin=origin,
        start=1_000 * MS,
    )


def _answer(phase: Any, i: int, ttft_ms: int, total_ms: int, tokens: int) -> None:
    rec = phase.records
    rec.first_token_ns[i] = phase.origin[i] + ttft_ms * MS
    rec.completed_ns[i] = phase.origin[i] + total_ms * MS
    rec.n_tokens[i] = tokens


def test_figures_are_those_of_the_samples_done_so_far() -> None:
    phase = _phase()
    # Samples 0..3 answered: TTFT 50 ms (one 90 ms), 11 tokens over 1 s (TPOT ~95 ms).
    for i in range(4):
        _answer(phase, i, 90 if i == 3 else 50, 1_000, 11)
    phase.records.completed_ns[4] = phase.origin[4] + 200 * MS
    phase.records.status[4] = 1  # failed
    f = live_figures(phase)
    assert (f.ok, f.failed) == (4, 1)
    # The last success ended 300 ms + 1 s after the phase began: 4 in 1.3 s.
    assert f.per_s is not None and abs(f.per_s - 4 / 1.3) < 1e-9
    assert f.tokens_per_s is not None and abs(f.tokens_per_s - 44 / 1.3) < 1e-6
    assert f.ttft_p99_ms is not None and 88 < f.ttft_p99_ms <= 90
    assert f.tpot_p99_ms is not None and abs(f.tpot_p99_ms - 95.0) < 1e-9


def test_a_phase_with_nothing_done_has_no_figures() -> None:
    f = live_figures(_phase())
    assert f == LiveFigures(0, 0, None, None, None, None)
    assert live_line(f) == ""


def test_the_line_fits_80_columns() -> None:
    line = live_line(LiveFigures(24_000, 12, 1_234.5, 456_789.0, 1_812.3, 41.25))
    assert line == (
        "1,234.5 samples/s · 456,789 tok/s · p99 TTFT 1,812 ms, TPOT 41.2 ms"
        " · 12 failed"
    )
    assert len(line) <= 80


def test_the_view_recomputes_at_most_once_per_interval() -> None:
    phase = _phase()
    _answer(phase, 0, 50, 1_000, 11)
    slow, eager = LiveView(every_s=3600), LiveView(every_s=0)
    for view in (slow, eager):
        view.phase_started(phase)
        assert "0 failed" in view.line()
    phase.records.completed_ns[1] = phase.origin[1] + 10 * MS
    phase.records.status[1] = 1
    assert "0 failed" in slow.line()  # not yet: read again in an hour
    assert "1 failed" in eager.line()
    eager.phase_ended()
    assert "1 failed" in eager.line()  # the last line stays, nothing is read
    eager.clear()
    assert eager.line() == "" and eager.figures is None


def test_the_bar_draws_the_line_under_it_at_80_columns() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    bar = progress_bar(console)
    bar.add_task("llama2-70b Server", total=100, completed=40)
    bar.live_line = "12.0 samples/s · p99 TTFT 812 ms · 0 failed"
    console.print(bar.get_renderable())
    lines = out.getvalue().splitlines()
    assert "40/100" in lines[0] and "ETA" in lines[0]
    assert lines[1] == bar.live_line


def test_a_run_hands_its_performance_phase_to_the_live_view(tmp_path) -> None:
    from infermeter.loadgen.settings import Scenario
    from infermeter.runs.request import RunRequest
    from infermeter.runs.run import execute
    from infermeter.testing.clock import ManualClock

    seen: list[LiveFigures] = []

    class Recorder:
        def phase_started(self, phase: Any) -> None:
            self.phase = phase

        def phase_ended(self) -> None:
            seen.append(live_figures(self.phase))

    request = RunRequest(
        sut="fake",
        output_dir=tmp_path / "run",
        store=tmp_path / "s.sqlite",
        index=False,
        scenario=Scenario.OFFLINE,
        total_sample_count=32,
    )
    report = execute(request, clock=ManualClock(), live=Recorder())
    done = report.document["metrics"]["samples_completed"]
    assert len(seen) == 1 and seen[0].ok == done > 0 and seen[0].failed == 0


def test_a_sweep_point_hands_its_measured_phase_not_its_warm_up() -> None:
    from infermeter.runs.load import LoadSpec, run_load
    from infermeter.suts.fake import FakeSUT
    from infermeter.testing.clock import ManualClock

    seen: list[LiveFigures] = []

    class Recorder:
        def phase_started(self, phase: Any) -> None:
            self.phase = phase

        def phase_ended(self) -> None:
            seen.append(live_figures(self.phase))

    clock = ManualClock()
    sut = FakeSUT(clock, token_run=True, fail_every=4)
    spec = LoadSpec(mode="concurrency", concurrency=2, requests=8, warmup_requests=4)
    result = run_load(sut, spec, sample_count=4, clock=clock, watcher=Recorder())
    m = result.metrics
    assert len(seen) == 1  # the warm-up's 4 are not watched
    assert (seen[0].ok, seen[0].failed) == (m.completed, m.failed) == (6, 2)
    assert seen[0].ttft_p99_ms is not None and seen[0].ttft_p99_ms >= 50


def test_a_run_completing_far_slower_than_it_issues_says_so(capsys) -> None:
    # The plan assumes the load is served as issued (2,000/s for 10 min); an
    # endpoint completing 100/s makes the ETA hours: the line says why.
    phase = _phase(n=20)
    phase.records.issued_ns[:] = phase.origin  # issued on time, 100 ms apart
    phase.start = phase.origin[0] - 9_000 * MS  # the last issued 10.9 s in
    for i in range(2):
        _answer(phase, i, 50, 1_000, 11)
    f = live_figures(phase)
    assert f.issued_per_s is not None and abs(f.issued_per_s - 20 / 10.9) < 1e-9
    assert f.behind() and "samples/s (issued 2/s)" in live_line(f)
    view = LiveView(every_s=0)
    view.phase_started(phase)
    lines = ProgressLines("llama2-70b Server", live=view)
    lines._next = 0.0  # print now
    lines(2, 20)
    assert "completing 0 samples/s of 2/s issued" in capsys.readouterr().err
    # Keeping up (every sample done) is not behind; nor is a phase just begun.
    for i in range(20):
        _answer(phase, i, 50, 60, 11)
    assert not live_figures(phase).behind()
    phase.start = phase.origin[0]
    assert live_figures(phase).issued_per_s is None
