"""benchmarks/client/side_by_side_runs.py: matching a client's records to the mock's
rows, and sampling a process tree's CPU (the parts of the side-by-side script that
decide its figures, without the reference client)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from infermeter.servers.mock_served import UNSET
from infermeter.servers.mock_stream import parse_request

CLIENT = Path(__file__).resolve().parents[2] / "benchmarks/client"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, CLIENT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


runs = _module("side_by_side_runs")
script = _module("reference_side_by_side")  # imports side_by_side_runs as loaded


def test_prompts_are_distinct_and_their_crc_is_the_mocks() -> None:
    texts = runs.prompt_texts(2000)
    assert len(set(texts)) == 2000 and all(len(t.split()) == 128 for t in texts)
    body = json.dumps({"messages": [{"role": "user", "content": texts[7]}]})
    parsed = parse_request(body.encode(), chat=True, in_flight=0)
    stamp_crc = runs.prompt_crc(parsed.words)  # what the mock logs
    assert runs.crc_of(texts[7]) == stamp_crc != runs.crc_of(texts[8])


def test_match_takes_client_minus_mock_ttft_and_counts_what_it_cannot_pair() -> None:
    run = runs.Run("t", "16", 4)
    rows = {
        "prompt_crc32": [1, 2, 3, 3, 4],
        "received_ns": [100, 200, 300, 310, 400],
        "first_byte_ns": [150, 260, 320, 330, UNSET],  # 4 failed on the mock
    }
    client = {
        1: (90, 1_000_150),  # client TTFT 1,000,060 ns; mock's 50 ns
        2: (190, 2_000_190),
        3: (0, 5),  # its prompt reached the mock twice: ambiguous
        4: (0, 5),
        5: (0, 5),  # never reached the mock
    }
    runs.match(run, client, rows)
    assert run.excess_ms == [(1_000_060 - 50) / 1e6, (2_000_000 - 60) / 1e6]
    assert run.unmatched == 3


def test_the_sampler_sees_cpu_spent_in_a_window_and_no_escape() -> None:
    me = os.getpid()
    sampler = runs.TreeSampler(me, set(os.sched_getaffinity(0)), mock=me)
    sampler.sample()
    start = time.monotonic_ns()
    spin_until = time.process_time() + 0.1  # 100 ms of CPU, however long it takes
    while time.process_time() < spin_until:
        pass
    end = time.monotonic_ns()
    sampler.sample()
    spent = sampler.cpu_between(start, end)
    # /proc counts in clock ticks (10 ms): generous bounds on a busy machine.
    assert 0.05 <= spent <= 0.5
    assert sampler.cpu_between(start, end, column=2) == spent  # the "mock" is me
    assert sampler.escaped == set() and sampler.peak_rss_mb > 1


def _pair(
    n1: int, n2: int, wall: tuple[float, float], cpu: tuple[float, float]
) -> tuple[Any, Any]:
    small = runs.Run("t", "16", n1, wall_s=wall[0], cpu_s=cpu[0])
    big = runs.Run("t", "16", n2, wall_s=wall[1], cpu_s=cpu[1])
    big.window_s, big.window_cpu_s, big.mock_window_cpu_s = 2.0, 1.0, 1.9
    big.ttft_ms, big.excess_ms = [1.0, 2.0, 3.0], [0.5, 1.5]
    return small, big


def test_a_level_row_cancels_start_up_and_flags_a_busy_mock(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pairs = [
        _pair(1000, 5000, (3.0, 5.0), (2.0, 4.0)),  # 4000 requests in 2 s, 2 CPU-s
        _pair(1000, 5000, (3.0, 7.0), (2.0, 6.0)),  # in 4 s, 4 CPU-s
        _pair(1000, 5000, (3.0, 11.0), (2.0, 3.0)),  # in 8 s, 1 CPU-s
    ]
    row = script.level_row(pairs)
    assert row["req_s"] == 1000.0  # the median of 2000, 1000 and 500
    assert row["cpu_ms_marginal"] == 0.5  # of 0.5, 1.0 and 0.25 ms
    assert row["window_req_s"] == 2500.0 and row["cpu_ms_window"] == 0.2
    assert row["ttft_p50_ms"] == 2.0 and row["over_mock_p50_ms"] == 1.0
    assert math.isclose(row["mock_busy"], 0.95)
    script.print_levels({"16": {"infermeter": row, "reference": row}})
    out = capsys.readouterr().out
    assert out.count("mock-limited") == 2 and "ratio i/r" in out
