"""Sweep bookkeeping: Pareto flags, limits, and the peak search (with a fake runner)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.runs.endpoints import PointMetrics
from infermeter.runs.load import LoadResult, LoadSpec
from infermeter.runs.selfcert import certify
from infermeter.runs.sweep import Limits, find_peak, pareto_flags, sweep


def _point(
    system_tps: float,
    per_user: float | None,
    ttft_ms: float = 10.0,
    failed: int = 0,
    unanswered: int = 0,
) -> PointMetrics:
    ttft = np.full(100, int(ttft_ms * 1e6), dtype=np.int64)
    tpot = np.full(100, int(1e9 / per_user), dtype=np.int64) if per_user else ttft[:0]
    return PointMetrics(
        concurrency=1.0,
        target_rate=None,
        issued=100,
        completed=100 - failed - unanswered,
        failed=failed,
        duration_ns=10**9,
        output_tokens=1000,
        system_tps=system_tps,
        qps=100.0,
        ttft_p90_ms=ttft_ms,
        tpot_p90_ms=1000 / per_user if per_user else None,
        tps_per_user=per_user,
        ttft_ns=ttft,
        tpot_ns=tpot,
        latency_ns=ttft,
        n_tokens=np.full(100, 10, dtype=np.int64),
    )


def _result(spec: LoadSpec, point: PointMetrics) -> LoadResult:
    zeros = np.zeros(3, dtype=np.int64)
    cert = certify(
        scheduled_ns=zeros, issued_ns=zeros, sent_ns=None, cpu_s=0.1, wall_s=1
    )
    phase: Any = None  # the sweep never looks at the phase
    return LoadResult(spec, phase, point, cert, dt.datetime.now(dt.UTC))


def test_pareto_flags() -> None:
    points = [_point(100, 50), _point(200, 40), _point(150, 30), _point(300, None)]
    # (150, 30) is beaten by (200, 40) on both axes; None per-user counts as 0.
    assert pareto_flags(points) == [True, True, False, True]


def test_a_point_with_requests_unanswered_is_never_pareto_nor_within_limits() -> None:
    # Its completion timeout ran out: its figures cover a window cut short.
    cut = _point(500, 100, unanswered=1)
    assert cut.unanswered == 1 and cut.curve_row()["unanswered"] == 1
    # (100, 50) is not beaten: the cut point's better figures do not count.
    assert pareto_flags([_point(100, 50), cut]) == [True, False]
    assert Limits().check(cut) == ["1 of 100 requests unanswered"]
    assert Limits().check(_point(500, 100)) == []


def test_limits_report_each_miss() -> None:
    limits = Limits(ttft_ms=50, tpot_ms=20, percentile=90)
    assert limits.check(_point(100, 100, ttft_ms=10)) == []
    misses = limits.check(_point(100, 25, ttft_ms=80, failed=3))
    assert misses == [
        "TTFT p90 80.0 ms > 50 ms",
        "TPOT p90 40.0 ms > 20 ms",
        "3 of 100 requests failed",
    ]
    assert Limits(tpot_ms=1).check(_point(1, None)) == ["no TPOT measured"]


def _fake_server(capacity: float) -> tuple[list[float], Any]:
    rates: list[float] = []

    def run(spec: LoadSpec) -> LoadResult:
        rates.append(spec.rate)
        ttft = 10.0 if spec.rate <= capacity else 900.0
        return _result(spec, _point(spec.rate * 10, 100, ttft_ms=ttft))

    return rates, run


@pytest.mark.parametrize(
    ("capacity", "start"), [(37.0, 1.0), (37.0, 100.0), (0.3, 1.0)]
)
def test_find_peak_brackets_then_bisects(capacity: float, start: float) -> None:
    rates, run = _fake_server(capacity)
    base = LoadSpec(mode="rate", duration_s=1.0)
    result = find_peak(run, base, Limits(ttft_ms=100), start_rate=start, precision=0.05)
    assert result.peak_rate is not None
    assert capacity * 0.95 <= result.peak_rate <= capacity
    assert len(result.points) == len(rates) <= 20
    assert [not m for m in result.misses] == [r <= capacity for r in rates]


def test_find_peak_needs_a_limit_and_sweep_needs_levels() -> None:
    _, run = _fake_server(1.0)
    with pytest.raises(ConfigError, match="--ttft-ms"):
        find_peak(run, LoadSpec(mode="rate", duration_s=1), Limits())
    with pytest.raises(ConfigError, match="at least one level"):
        sweep(run, LoadSpec(mode="rate", duration_s=1), [])


def test_sweep_levels_set_concurrency_or_rate() -> None:
    seen: list[tuple[int, float]] = []

    def run(spec: LoadSpec) -> LoadResult:
        seen.append((spec.concurrency, spec.rate))
        return _result(spec, _point(spec.concurrency * 10.0, 100 / spec.concurrency))

    result = sweep(run, LoadSpec(mode="concurrency", requests=5), [1, 2, 4])
    assert seen == [(1, 0.0), (2, 0.0), (4, 0.0)]
    assert result.pareto == [True, True, True]
    assert [row["meets_limits"] for row in result.table()] == [True, True, True]
