"""Check a plan in the serving simulator: one replica at its planned load (derived).

The planner sizes replicas analytically (``latency.tails``); ``simulate_option``
runs the discrete-event simulator on one replica of a planned option, at the
option's calibrated speed, with Poisson arrivals at the planned rate per replica
and the workload's lengths, and returns the simulated p99 TTFT and TPOT. Both
are simulated figures, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import (
    make_requests,
    poisson_arrivals,
    workload_lengths,
)
from infermeter.perfmodel.calibrate import efficiency_for, load_coefficients
from infermeter.perfmodel.planner import Option, Targets, scenario_for
from infermeter.perfmodel.roofline import Deployment
from infermeter.perfmodel.simulator import ServingConfig, simulate
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import MAX_BATCH_PER_ACCELERATOR


@dataclass(frozen=True, slots=True)
class Simulated:
    """Simulated p99s of one replica of an option at its planned load (derived)."""

    ttft_p99_ms: float
    tpot_p99_ms: float
    requests: int
    seed: int

    def meets(self, t: Targets) -> bool:
        return (
            self.ttft_p99_ms <= t.ttft_ms
            and self.tpot_p99_ms <= 1e3 / t.tokens_per_user
        )


def simulate_option(
    option: Option,
    model: str,
    t: Targets,
    *,
    requests: int,
    seed: int = 1,
    stack: str = "trt-llm",
    fit: str | None = None,
) -> Simulated | None:
    """Simulate one replica of ``option`` at ``t``'s load per replica; None for
    disaggregated pools (the planner's p99s do not cover them)."""
    if requests < 10:
        raise ConfigError(f"--simulate needs >= 10 requests (got {requests}).")
    if option.disaggregated:
        return None
    acc, arch, base = (
        get_accelerator(option.accelerator),
        get_model(model),
        get_workload(model),
    )
    eff = efficiency_for(
        acc.key,
        option.precision,
        stack=stack,
        benchmark=base.key,
        scenario=scenario_for(t, base),
        coefficients=load_coefficients(fit) if fit else None,
    )
    dep = Deployment(
        acc,
        arch,
        option.precision,
        option.tp,
        ep=option.expert_parallel,
        domain=min(acc.scaleup_domain, option.tp),
        max_batch=MAX_BATCH_PER_ACCELERATOR * option.tp,
    )
    isl, osl = workload_lengths(t.workload(base), requests, seed)
    qps = t.tokens_per_s / t.osl / option.replicas
    res = simulate(
        ServingConfig(dep, eff),
        make_requests(poisson_arrivals(qps, requests, seed), isl, osl),
    )
    several = res.n_tokens > 1
    return Simulated(
        float(np.percentile(res.ttft_ns, 99)) / 1e6,
        float(np.percentile(res.tpot_ns[several], 99)) / 1e6 if several.any() else 0.0,
        requests,
        seed,
    )
