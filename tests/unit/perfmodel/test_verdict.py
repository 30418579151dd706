"""Server verdicts of simulated runs against published MLPerf v4.1 Server rates."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.perfmodel.arrivals import make_requests
from infermeter.perfmodel.simulator import SimResult, simulate_server
from infermeter.perfmodel.specs import get_workload
from infermeter.perfmodel.systems import build_system
from infermeter.perfmodel.verdict import (
    find_peak,
    judge_server,
    judge_workload,
    percentile_ns,
)

WL = get_workload("llama2-70b")
N = 24_576  # the MLPerf Llama 2 70B sample count
SERVER_ARRIVAL_S = 180.0


def test_percentile_is_loadgen_floor_convention() -> None:
    values = np.arange(1, 101, dtype=np.int64)[::-1].copy()
    assert percentile_ns(values, 0.99) == 100  # sorted[floor(100 * 0.99)] = sorted[99]
    assert percentile_ns(values, 0.5) == 51


def _result(ttft_ms: float, tpot_ms: float, n: int = 1000) -> SimResult:
    arrival = np.zeros(n, dtype=np.int64)
    first = np.full(n, int(ttft_ms * 1e6), dtype=np.int64)
    done = first + int(tpot_ms * 1e6) * 9
    return SimResult(arrival, first, done, np.full(n, 10, dtype=np.int64))


def test_limits_are_strict_and_both_are_checked() -> None:
    assert judge_server(_result(1999, 199), ttft_ms=2000, tpot_ms=200).valid
    at_limit = judge_server(_result(2000, 10), ttft_ms=2000, tpot_ms=200)
    assert not at_limit.valid and "TTFT p99" in at_limit.reasons[0]
    slow = judge_server(_result(10, 250), ttft_ms=2000, tpot_ms=200)
    assert slow.result == "INVALID" and any("TPOT" in r for r in slow.reasons)


def test_early_stopping_needs_enough_queries() -> None:
    few = judge_server(_result(10, 10, n=100), ttft_ms=2000, tpot_ms=200)
    assert not few.valid and "more queries" in few.reasons[0]


def _queries(qps: float) -> int:
    # A Server run lasts at least 600 s (MLPerf). On 8 B200 a request takes about
    # 40 s at full batch, so the sample count alone (60 s of arrivals) ends before
    # an overload shows; 180 s of arrivals shows it and keeps the test quick.
    return max(N, int(qps * SERVER_ARRIVAL_S))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("result_id", "accelerator", "model", "published_tokens_s"),
    # The shipped fit reads v4.1 and v5.1: it simulates today's software. Mixtral
    # used to come out 1.8x too high here (the calibration skipped serve-sim).
    [
        ("5.1-0049", "h200-sxm", "llama2-70b", 33164.4),
        ("5.1-0069", "b200", "llama2-70b", 99123.0),
        ("5.1-0049", "h200-sxm", "mixtral-8x7b", 60955.1),
    ],
)
def test_published_server_rate_is_valid_and_130_percent_is_not(
    result_id: str, accelerator: str, model: str, published_tokens_s: float
) -> None:
    wl = get_workload(model)
    system = build_system(accelerator, 8, model)
    qps = published_tokens_s / wl.osl_mean
    at = judge_workload(simulate_server(system, wl, qps, _queries(qps), seed=1), wl)
    more = 1.3 * qps
    over = judge_workload(simulate_server(system, wl, more, _queries(more), seed=1), wl)
    assert at.valid, (result_id, at.reasons)
    assert not over.valid, result_id


def test_find_peak_brackets_the_capacity() -> None:
    system = build_system("h100-sxm", 2, "llama2-70b")
    n = 1200

    def run(qps: float) -> SimResult:
        return simulate_server(system, WL, qps, n, seed=2)

    peak = find_peak(
        run, lambda r: judge_workload(r, WL), lo_qps=8.0, hi_qps=24.0, rel_tol=0.1
    )
    assert peak > 8.0
    assert judge_workload(run(peak), WL).valid
    assert not judge_workload(run(peak * 1.3), WL).valid


def test_find_peak_returns_zero_when_nothing_is_valid() -> None:
    arr = np.zeros(10, dtype=np.int64)
    bad = SimResult(arr, arr + 10**10, arr + 2 * 10**10, arr + 5)
    assert (
        find_peak(lambda q: bad, lambda r: judge_workload(r, WL), lo_qps=1, hi_qps=2)
        == 0.0
    )
    assert len(make_requests(arr, 5, 5)) == 10
