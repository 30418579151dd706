"""Steady-state Offline and Server throughput of a system from the step-time roofline.

A replica at batch ``B`` admits ``B / OSL`` new sequences per step, so each step
carries ``B`` decode tokens plus ``B * ISL / OSL`` prefill tokens (chunked
prefill, spec section 3.1 "throughput regime"). Offline runs at the largest
batch the KV cache holds; Server at the largest batch whose step stays under
the TPOT limit with headroom for the p99. The tensor-parallel size is the one
that maximises throughput (submitters tune it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.roofline import (
    Deployment,
    Efficiency,
    FloatArray,
    step_time_s,
)
from infermeter.perfmodel.specs import Accelerator, ModelArch, Workload

TPOT_HEADROOM = 0.85  # mean step vs the p99 TPOT limit
_BATCH_POINTS = 32


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """A whole system: ``count`` accelerators of one kind serving one model."""

    accelerator: Accelerator
    count: int
    model: ModelArch
    precision: str


def tp_options(count: int) -> list[int]:
    """Tensor-parallel sizes that divide ``count`` (powers of two)."""
    return [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= count and count % t == 0]


def max_batch(dep: Deployment, wl: Workload) -> int:
    """Largest batch the KV cache holds when each sequence reserves ISL + OSL tokens."""
    per_seq = dep.kv_bytes_per_token * (wl.isl_mean + wl.osl_mean)
    return int(min(dep.max_batch, max(0.0, dep.free_bytes) // per_seq))


def _batches(b_max: int) -> FloatArray:
    pts = np.unique(np.geomspace(1, b_max, _BATCH_POINTS).round())
    return pts.astype(float)


def _grid_step(
    dep: Deployment,
    eff: Efficiency,
    wl: Workload,
    b: FloatArray,
    eta_c: FloatArray,
    eta_m: FloatArray,
) -> FloatArray:
    context = np.full_like(b, wl.isl_mean + wl.osl_mean / 2.0)
    return step_time_s(
        dep,
        eff,
        decode=b,
        context=context,
        prefill=b * wl.isl_mean / wl.osl_mean,
        prefill_context=np.full_like(b, wl.isl_mean / 2.0),
        compute_eff=eta_c,
        memory_eff=eta_m,
    )


def throughput_grid(
    system: SystemSpec,
    wl: Workload,
    scenario: str,
    eff: Efficiency,
    eta_c: FloatArray,
    eta_m: FloatArray,
) -> FloatArray:
    """System output tokens/s (before the Server derate) for every (eta_c, eta_m).

    ``eta_c`` and ``eta_m`` broadcast against each other; the result has their
    broadcast shape. Raises ConfigError when no TP size fits the model.
    """
    shape = np.broadcast_shapes(eta_c.shape, eta_m.shape)
    best = np.zeros(shape)
    limit = wl.tpot_ms / 1e3 * TPOT_HEADROOM
    for tp in tp_options(system.count):
        dep = Deployment(system.accelerator, system.model, system.precision, tp)
        b_max = max_batch(dep, wl)
        if b_max < 1:
            continue
        b = _batches(b_max)
        step = _grid_step(dep, eff, wl, b, eta_c[..., None], eta_m[..., None])
        thr = b / step
        if scenario == "Server":
            thr = np.where(step <= limit, thr, 0.0)
        best = np.maximum(best, (system.count // tp) * thr.max(axis=-1))
    if not np.any(best > 0):
        raise ConfigError(
            f"{system.model.name} at {system.precision.upper()} does not fit on "
            f"{system.count} x {system.accelerator.name} at any TP size."
        )
    return best


def predict(system: SystemSpec, wl: Workload, scenario: str, eff: Efficiency) -> float:
    """Predicted system output tokens/s under ``scenario`` (Offline or Server)."""
    one = np.asarray([1.0])
    grid = throughput_grid(
        system, wl, scenario, eff, one * eff.compute, one * eff.memory
    )
    derate = eff.server if scenario == "Server" else 1.0
    return float(grid[0]) * derate


def best_tp(system: SystemSpec, wl: Workload, eff: Efficiency) -> int:
    """The TP size with the highest Offline throughput."""
    scores = {}
    one = np.asarray([1.0])
    for tp in tp_options(system.count):
        sub = SystemSpec(system.accelerator, tp, system.model, system.precision)
        try:
            scores[tp] = (
                float(
                    throughput_grid(
                        sub, wl, "Offline", eff, one * eff.compute, one * eff.memory
                    )[0]
                )
                / tp
            )
        except ConfigError:
            continue
    if not scores:
        raise ConfigError(
            f"{system.model.name} at {system.precision.upper()} does not fit on "
            f"{system.count} x {system.accelerator.name} at any TP size."
        )
    return max(scores, key=lambda t: scores[t])
