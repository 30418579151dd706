"""Check plans: in the serving simulator, and against published rows (derived).

The planner sizes replicas analytically (``latency.tails``); ``simulate_option``
runs the discrete-event simulator on one replica of a planned option
(``systems.build_system``, at the option's calibrated speed) with Poisson
arrivals at the planned rate per replica and the workload's lengths, and returns
the simulated p99 TTFT and TPOT as LoadGen takes them (``verdict.judge_server``).
Both are simulated figures, not measurements. ``plan_published_row`` plans a
published Server or Interactive row's tokens/s at its benchmark's bounds on its
part, precision and stack (the planner check of docs/perfmodel.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import (
    make_requests,
    poisson_arrivals,
    workload_lengths,
)
from infermeter.perfmodel.latency import CHUNK_TOKENS
from infermeter.perfmodel.planner import Infeasible, Option, Targets, plan_accelerator
from infermeter.perfmodel.published import PublishedRow
from infermeter.perfmodel.simulator import simulate
from infermeter.perfmodel.specs import get_workload
from infermeter.perfmodel.systems import build_system
from infermeter.perfmodel.verdict import NS_PER_MS, judge_server


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
    fit: str | None = None,
) -> Simulated | None:
    """Simulate one replica of ``option`` at ``t``'s load per replica; None for
    disaggregated pools (the planner's p99s do not cover them)."""
    if requests < 10:
        raise ConfigError(f"--simulate needs >= 10 requests (got {requests}).")
    if option.disaggregated:
        return None
    built = build_system(
        option.accelerator,
        option.tp,
        model,
        precision=option.precision,
        tp=option.tp,
        ep=option.expert_parallel,
        stack=option.stack,
        coefficients=fit,
    )
    # The planner's p99s assume CHUNK_TOKENS of prefill a step; build_system sizes
    # the budget for the benchmark's lengths, not the user's.
    cfg = replace(built, chunk_tokens=CHUNK_TOKENS)
    isl, osl = workload_lengths(t.workload(get_workload(model)), requests, seed)
    qps = t.tokens_per_s / t.osl / option.replicas
    res = simulate(cfg, make_requests(poisson_arrivals(qps, requests, seed), isl, osl))
    p99 = judge_server(res, ttft_ms=t.ttft_ms, tpot_ms=1e3 / t.tokens_per_user)
    return Simulated(
        p99.ttft_p99_ns / NS_PER_MS, p99.tpot_p99_ns / NS_PER_MS, requests, seed
    )


def plan_published_row(
    row: PublishedRow, fit: str | None = None
) -> Option | Infeasible:
    """Plan ``row``'s tokens/s at its benchmark's TTFT and TPOT bounds (as many
    users as the TPOT bound needs) on its part, precision and stack, with its
    round's software (a benchmark's first round has its own Server level)."""
    wl = get_workload(row.benchmark)
    limits = wl.limits(row.scenario)
    if limits is None:
        raise ConfigError(f"{row.label}: Offline rows have no latency bounds to plan.")
    ttft_ms, tpot_ms = limits
    users = max(1, math.ceil(row.tokens_per_s * tpot_ms / 1000.0))
    target = Targets(
        users=users,
        tokens_per_user=row.tokens_per_s / users,
        ttft_ms=ttft_ms,
        isl=round(wl.isl_mean),
        osl=round(wl.osl_mean),
    )
    part = row.parts[0][0] if row.parts else row.accelerator
    return plan_accelerator(
        part,
        row.benchmark,
        target,
        row.precision,
        stack=row.stack,
        fit=fit,
        round_=row.round,
    )
