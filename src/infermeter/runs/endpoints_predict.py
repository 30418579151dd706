"""Each planned point's figures from infermeter's performance model (derived, not measured).

``perfmodel.systems.build_system`` sizes the system (replicas, TP, precision and
calibrated efficiency, as ``infermeter plan`` does); a closed loop of C users then
spreads over the replicas, ``b = C / replicas`` each, at most the replica's batch
(more users wait for a slot). One decode step serves ``b`` sequences at the mean
context (prompt plus half the output) and prefills each request's prompt spread
over its output's steps (``b * isl / osl`` tokens a step): TPOT is that step. TTFT
is the prompt's own prefill, one step with the whole prompt beside the decodes,
plus the wait for a slot. system_tps = served users x output length / request time.
All are means from the step model: the TTFT and TPOT are not p90s, and tps_per_user
is 1000 / the mean TPOT. Labelled derived wherever printed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infermeter.perfmodel.roofline import step_time_s
from infermeter.perfmodel.simulator import ServingConfig
from infermeter.perfmodel.specs import Workload, get_model, get_workload
from infermeter.perfmodel.systems import build_system

LABEL = "derived (performance model: step-model means, not p90s)"


@dataclass(frozen=True, slots=True)
class Predicted:
    """One level's predicted figures (derived)."""

    concurrency: int
    system_tps: float
    tps_per_user: float
    ttft_ms: float
    qps: float


def predict_curve(
    levels: list[int], model: str, accelerator: str, count: int
) -> tuple[dict[int, Predicted], Workload]:
    """Predicted figures per level, and the benchmark workload they assume."""
    cfg = build_system(accelerator, count, model)
    wl = get_workload(get_model(model).key)
    return {c: _predict(cfg, wl, c) for c in levels}, wl


def _step(cfg: ServingConfig, wl: Workload, batch: float, prefill: float) -> float:
    seconds = step_time_s(
        cfg.deployment,
        cfg.efficiency,
        decode=_arr(batch),
        context=_arr(wl.isl_mean + wl.osl_mean / 2),
        prefill=_arr(prefill),
        prefill_context=_arr(wl.isl_mean / 2),
    )
    return float(seconds)


def _arr(value: float) -> npt.NDArray[np.float64]:
    return np.asarray(value, dtype=np.float64)


def _predict(cfg: ServingConfig, wl: Workload, c: int) -> Predicted:
    slots = cfg.replicas * cfg.deployment.max_batch
    served = min(float(c), float(slots))
    batch = served / cfg.replicas
    tpot = _step(cfg, wl, batch, batch * wl.isl_mean / wl.osl_mean)
    chunks = math.ceil(wl.isl_mean / cfg.chunk_tokens)
    first = chunks * _step(cfg, wl, batch, min(wl.isl_mean, float(cfg.chunk_tokens)))
    request_s = first + (wl.osl_mean - 1) * tpot
    wait = max(0.0, c / slots - 1.0) * request_s  # users beyond the slots queue
    qps = served / request_s
    return Predicted(
        concurrency=c,
        system_tps=qps * wl.osl_mean,
        tps_per_user=1.0 / tpot,
        ttft_ms=(first + wait) * 1e3,
        qps=qps,
    )
