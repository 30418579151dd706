"""FindPeakPerformance: the highest Server QPS whose run meets the latency constraints.

LoadGen's search: from the user's QPS (which must pass), widen by
``1 + server_find_peak_qps_boundary_step_size`` until a run fails, then
bisect until ``floor(low * 10^d) + 1 >= floor(high * 10^d)``,
``d = server_find_peak_qps_decimals_of_precision``. Each trial is a whole
performance run; the last, at the peak, is the one reported.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Protocol

from infermeter.loadgen.settings import EffectiveSettings
from infermeter.loadgen.summary import Summary

Measure = Callable[[EffectiveSettings, bool], Summary]
"""Run one performance phase at these settings; ``True``: it is the final one."""


class Note(Protocol):
    def __call__(self, message: str, *, error: bool) -> None: ...


def find_peak(
    eff: EffectiveSettings,
    measure: Measure,
    *,
    trials: list[tuple[float, bool]],
    note: Note,
) -> None:
    """Search the peak; every trial (QPS, constraints met) is appended to ``trials``."""
    base = measure(eff, False)
    trials.append((eff.target_qps, base.perf_constraints_met))
    if not base.perf_constraints_met:
        note(
            "FindPeakPerformance: Initial lower bound does not satisfy performance "
            "constraints",
            error=True,
        )
        measure(eff, True)
        return
    step = 1 + eff.requested.server_find_peak_qps_boundary_step_size

    def passes(qps: float) -> bool:
        summary = measure(with_qps(eff, qps), False)
        trials.append((qps, summary.perf_constraints_met))
        return summary.perf_constraints_met

    low, high = eff.target_qps, eff.target_qps * step
    while passes(high):
        low, high = high, high * step
    scale = 10**eff.requested.server_find_peak_qps_decimals_of_precision
    while math.floor(low * scale) + 1 < math.floor(high * scale):
        mid = math.floor((low + high) / 2 * scale) / scale
        if passes(mid):
            low = mid
        else:
            high = mid
    note(f"FindPeakPerformance: found peak {low}", error=False)
    measure(with_qps(eff, low), True)


def with_qps(eff: EffectiveSettings, qps: float) -> EffectiveSettings:
    """The same settings at another Server QPS."""
    return dataclasses.replace(
        eff, target_qps=qps, requested=eff.requested.copy(server_target_qps=qps)
    )
