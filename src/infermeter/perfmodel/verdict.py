"""MLPerf Server verdicts on simulated runs, and FindPeak: the highest valid rate.

The p99 is ``sorted[floor(n * 0.99)]`` (LoadGen's convention); a run is VALID
when the TTFT and TPOT p99 are strictly below their limits (the submission
checker's rule) and early stopping accepts both (``infermeter.loadgen``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError
from infermeter.loadgen.early_stopping import server_check
from infermeter.perfmodel.arrivals import IntArray
from infermeter.perfmodel.simulator import SimResult
from infermeter.perfmodel.specs import Workload

PERCENTILE = 0.99
NS_PER_MS = 1_000_000


def percentile_ns(values: IntArray, p: float = PERCENTILE) -> int:
    """LoadGen's percentile: the element at ``floor(n * p)`` of the sorted values."""
    if values.size == 0:
        raise ConfigError("No samples to take a percentile of.")
    ordered = np.sort(values)
    return int(ordered[min(values.size - 1, math.floor(values.size * p))])


@dataclass(frozen=True, slots=True)
class ServerVerdict:
    """VALID/INVALID with the measured p99s, the limits and the failed checks."""

    valid: bool
    ttft_p99_ns: int
    tpot_p99_ns: int
    ttft_limit_ns: int
    tpot_limit_ns: int
    reasons: tuple[str, ...]

    @property
    def result(self) -> str:
        return "VALID" if self.valid else "INVALID"


def _check(name: str, values: IntArray, limit_ns: int, reasons: list[str]) -> int:
    p99 = percentile_ns(values)
    if p99 >= limit_ns:
        reasons.append(
            f"{name} p99 {p99 / NS_PER_MS:.1f} ms >= limit {limit_ns / NS_PER_MS:.0f} ms"
        )
    over = int((values > limit_ns).sum())
    ok, more = server_check(int(values.size), over, PERCENTILE)
    if not ok:
        reasons.append(f"{name} early stopping: would need {more} more queries")
    return p99


def judge_server(result: SimResult, *, ttft_ms: float, tpot_ms: float) -> ServerVerdict:
    """Judge a simulated Server run against TTFT/TPOT limits (ms)."""
    reasons: list[str] = []
    ttft_limit = int(ttft_ms * NS_PER_MS)
    tpot_limit = int(tpot_ms * NS_PER_MS)
    ttft = _check("TTFT", result.ttft_ns, ttft_limit, reasons)
    tpot = _check("TPOT", result.tpot_ns, tpot_limit, reasons)
    return ServerVerdict(
        not reasons, ttft, tpot, ttft_limit, tpot_limit, tuple(reasons)
    )


def judge_workload(result: SimResult, wl: Workload) -> ServerVerdict:
    """Judge against the benchmark's Server limits (e.g. llama2-70b: 2000 / 200 ms)."""
    return judge_server(result, ttft_ms=wl.ttft_ms, tpot_ms=wl.tpot_ms)


def find_peak(
    run: Callable[[float], SimResult],
    judge: Callable[[SimResult], ServerVerdict],
    *,
    lo_qps: float,
    hi_qps: float,
    rel_tol: float = 0.02,
) -> float:
    """Highest QPS whose simulated run is VALID, by bisection between the bounds.

    ``lo_qps`` must be valid; ``hi_qps`` is doubled until it is invalid (at most
    8 times). Returns 0.0 when even ``lo_qps`` is invalid.
    """
    if not 0 < lo_qps < hi_qps:
        raise ConfigError(
            f"FindPeak needs 0 < lo_qps < hi_qps (got {lo_qps}, {hi_qps})."
        )
    if not judge(run(lo_qps)).valid:
        return 0.0
    for _ in range(8):
        if not judge(run(hi_qps)).valid:
            break
        lo_qps, hi_qps = hi_qps, hi_qps * 2
    while hi_qps - lo_qps > rel_tol * lo_qps:
        mid = (lo_qps + hi_qps) / 2
        if judge(run(mid)).valid:
            lo_qps = mid
        else:
            hi_qps = mid
    return lo_qps
