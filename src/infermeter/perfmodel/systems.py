"""Build a calibrated serving configuration from names: accelerator, count, model.

This is the entry point for callers that think in systems ("8 x h100-sxm
serving llama2-70b"), such as the planner, the simulated SUT and serve-sim.
The shipped coefficients (or ``coefficients``: a fit name or JSON file) set the
speed of the system's stack, part, precision and benchmark, so serve-sim and
the planner predict what ``model predict`` validates.
"""

from __future__ import annotations

import math

from infermeter.errors import ConfigError
from infermeter.perfmodel.calibrate import efficiency_for, load_coefficients
from infermeter.perfmodel.latency import CHUNK_TOKENS
from infermeter.perfmodel.roofline import Deployment
from infermeter.perfmodel.simulator import ServingConfig
from infermeter.perfmodel.specs import (
    Workload,
    get_accelerator,
    get_model,
    get_workload,
    runs_weight_only,
)
from infermeter.perfmodel.throughput import (
    MAX_BATCH_PER_ACCELERATOR,
    SystemSpec,
    best_config,
    replica_throughput,
    tp_options,
)


def default_precision(accelerator: str, model: str = "") -> str:
    """The lowest precision the part computes natively (what MLPerf submitters run),
    or FP4 where ``model``'s FP4 checkpoint runs weight-only on it (as shipped)."""
    acc = get_accelerator(accelerator)
    if model and runs_weight_only(acc, get_model(model), "fp4"):
        return "fp4"
    return acc.lowest_precision()


def build_system(
    accelerator: str,
    count: int,
    model: str,
    *,
    precision: str | None = None,
    tp: int | None = None,
    ep: bool = False,
    router: str = "least-loaded",
    stack: str | None = None,
    coefficients: str | None = None,
) -> ServingConfig:
    """``count`` accelerators serving ``model`` as ``count / tp`` replicas.

    Missing ``precision`` -> the part's lowest native one; missing ``tp`` -> the
    replica shape with the best Server throughput (expert parallel for MoE where
    it wins); a given ``tp`` runs expert parallel when ``ep``. Coefficients come
    from calibration, for ``stack`` or the stack the part usually runs.
    """
    acc = get_accelerator(accelerator)
    arch = get_model(model)
    if count < 1:
        raise ConfigError(f"Accelerator count must be >= 1 (got {count}).")
    prec = precision or default_precision(acc.key, arch.key)
    wl = get_workload(arch.key)
    coef = load_coefficients(coefficients) if coefficients else None
    eff = efficiency_for(
        acc.key, prec, stack=stack, benchmark=wl.key, coefficients=coef
    )
    system = SystemSpec(acc, count, arch, prec)
    if tp is None:
        choice = best_config(system, wl, "Server", eff)
        tp, ep = choice.tp, choice.ep
    if tp not in tp_options(count):
        raise ConfigError(
            f"TP size {tp} must divide the accelerator count {count}; "
            f"choose one of {tp_options(count)}."
        )
    dep = Deployment(
        acc,
        arch,
        prec,
        tp,
        ep=ep,
        domain=min(acc.scaleup_domain, count),
        max_batch=MAX_BATCH_PER_ACCELERATOR * tp,
    )
    dep.check_fits(wl.isl_mean + wl.osl_mean)
    _, batch, _, _ = replica_throughput(dep, wl, "Server", eff)
    return ServingConfig(
        dep,
        eff,
        replicas=count // tp,
        router=router,
        chunk_tokens=token_budget(batch, wl),
    )


def token_budget(batch: int, wl: Workload) -> int:
    """Prefill tokens per step the scheduler may add: at least the simulator's
    default, and enough for the prompts a step of ``batch`` sequences admits
    (``batch * ISL / OSL``, the throughput model's steady state), in whole
    kilo-tokens. Submitters size it so (TensorRT-LLM's ``max_num_tokens``); with
    the default alone one large replica could not prefill what it decodes."""
    need = batch * wl.isl_mean / wl.osl_mean
    return max(CHUNK_TOKENS, 1024 * math.ceil(need / 1024))
