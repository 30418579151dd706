"""Capacity planner: the cheapest (precision, replica shape, replicas) per accelerator.

For ``users`` concurrent streams at ``tokens_per_user`` tok/s each (TPOT target
``1 / tokens_per_user``), a replica carries the largest batch whose steady-state
step (decode plus the amortised prefill of arriving prompts) meets the TPOT
target with the p99 headroom and whose KV cache holds it, at the calibrated
speed of that part, stack and benchmark; the Server derate applies, and a
replica carries no more than keeps its p99 TTFT and TPOT on target under random
arrivals (``latency.tails``). Memory and step time are MoE-aware: expert
parallelism keeps one copy of the experts per replica and a copy of the
attention per accelerator. Replicas = ceil(demand / replica throughput) (spec
section 3.1 "Serving"). Costs and energy are derived figures, not measurements.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.calibrate import (
    check_stack,
    efficiency_for,
    load_coefficients,
)
from infermeter.perfmodel.latency import Tails, tails
from infermeter.perfmodel.plananchor import named, plan_level
from infermeter.perfmodel.roofline import Deployment, Efficiency, prefill_s
from infermeter.perfmodel.specs import (
    PRECISION_BYTES,
    PRECISIONS,
    Accelerator,
    ModelArch,
    Workload,
    accelerators,
    get_accelerator,
    get_model,
    get_workload,
    runs_at,
)
from infermeter.perfmodel.throughput import (
    SystemSpec,
    deployments,
    replica_throughput,
)

MAX_ACCELERATORS = 4096
# Published / predicted throughput of the planner's calibration rows, 10th and
# 90th percentile (leave-one-system-out): the band of the accelerator count.
BAND = (0.8, 1.25)


@dataclass(frozen=True, slots=True)
class Targets:
    """What the service must deliver."""

    users: int
    tokens_per_user: float
    ttft_ms: float
    isl: int
    osl: int

    def __post_init__(self) -> None:
        if self.users < 1:
            raise ConfigError(f"--users must be >= 1 (got {self.users}).")
        if not self.tokens_per_user > 0:
            raise ConfigError(
                f"--tokens-per-user must be > 0 (got {self.tokens_per_user})."
            )
        if not self.ttft_ms > 0:
            raise ConfigError(f"--ttft-ms must be > 0 (got {self.ttft_ms}).")
        if self.isl < 1 or self.osl < 1:
            raise ConfigError(
                f"--isl and --osl must be >= 1 (got {self.isl}, {self.osl})."
            )

    @property
    def tokens_per_s(self) -> float:
        return self.users * self.tokens_per_user

    def workload(self, base: Workload) -> Workload:
        """The benchmark's workload with these lengths and bounds (spread kept)."""
        return dataclasses.replace(
            base,
            isl_mean=float(self.isl),
            osl_mean=float(self.osl),
            ttft_ms=self.ttft_ms,
            tpot_ms=1000.0 / self.tokens_per_user,
        )


@dataclass(frozen=True, slots=True)
class Option:
    """One feasible configuration of one accelerator type (predicted, derived).

    ``tpot_ms`` and ``ttft_ms`` are the p99s at the planned load per replica
    under random arrivals (``latency.tails``); disaggregated pools (``P/D``)
    report the decode step and the prefill without queueing (a lower bound).
    """

    accelerator: str
    precision: str
    stack: str
    tp: int
    batch_per_replica: int
    replicas: int
    accelerators: int
    tpot_ms: float
    ttft_ms: float
    tokens_per_s: float
    usd_per_hour: float | None
    usd_per_mtok: float | None
    tokens_per_joule: float | None
    accelerators_band: tuple[int, int]
    expert_parallel: bool = False
    disaggregated: bool = False
    # "anchored": the calibrated rate scaled by what the nearest published rows
    # of the benchmark say of the model (``anchors``: their result IDs, heaviest
    # first, of ``anchor_count``); "modelled": the calibrated model alone.
    basis: str = "modelled"
    anchors: tuple[str, ...] = ()
    anchor_count: int = 0


@dataclass(frozen=True, slots=True)
class Infeasible:
    """Why no configuration of an accelerator type meets the targets."""

    accelerator: str
    reason: str


@lru_cache(maxsize=1)
def prices() -> dict[str, tuple[float, str, str]]:
    """$/accelerator-hour, source and date per accelerator: the first on-demand offer
    of the one price table (``data/prices.toml``, a dated snapshot)."""
    text = (
        resources.files("infermeter.perfmodel")
        .joinpath("data")
        .joinpath("prices.toml")
        .read_text()
    )
    out: dict[str, tuple[float, str, str]] = {}
    for offer in tomllib.loads(text).get("offer", []):
        if offer.get("price_type") == "on-demand":
            out.setdefault(
                str(offer["gpu"]),
                (
                    float(offer["usd_per_gpu_hour"]),
                    str(offer.get("source", "")),
                    str(offer.get("retrieved_at", "")),
                ),
            )
    return out


# A replica shape, its rate, batch and step, whether pools, and the replicas
# the demand needs at that rate with every replica's own p99s on target.
Shape = tuple[Deployment, float, int, float, bool, int]
# Why a configuration fails, and how far off it is (target multiples; inf: no fit).
Why = tuple[float, str]


def _best_shape(
    acc: Accelerator,
    arch: ModelArch,
    prec: str,
    wl: Workload,
    eff: Efficiency,
    t: Targets,
    disaggregated: bool,
    bench: Workload,
) -> Shape | Why:
    """The replica shape needing the fewest accelerators for the demand (TPOT and
    TTFT met; ties broken by ``_rank``); else the nearest miss.

    ``bench`` is the benchmark's workload with the bounds of the scenario whose
    derate applies: the calibration already holds its p99s there.
    """
    best: Shape | None = None
    why: Why = (math.inf, f"{arch.name} does not fit on {acc.name} at {prec.upper()}")
    shapes = [
        (dep, split)
        for dep in deployments(SystemSpec(acc, 1 << 12, arch, prec), pcie_tp=True)
        for split in ((False, True) if disaggregated else (False,))
        if dep.tp <= 72
    ]
    for dep, split in shapes:
        try:
            dep.check_fits(t.isl + t.osl)
        except ConfigError as exc:
            why = min(why, (math.inf, str(exc)))
            continue
        thr, batch, step, ok = replica_throughput(
            dep, wl, "Server", eff, disaggregated=split
        )
        if not ok:
            miss = step * t.tokens_per_user
            why = min(
                why,
                (
                    miss,
                    f"{_shape(dep)} {prec.upper()}: one stream already "
                    f"takes {step * 1e3:.0f} ms per token",
                ),
            )
            continue
        ttft = prefill_s(dep, eff, t.isl) + step
        if ttft * 1e3 >= t.ttft_ms:
            miss = ttft * 1e3 / t.ttft_ms
            why = min(
                why,
                (
                    miss,
                    f"{_shape(dep)} {prec.upper()}: prefill alone takes "
                    f"{ttft * 1e3:.0f} ms",
                ),
            )
            continue
        replica = thr * eff.server
        floor = 2 if split else 1  # a prefill and a decode replica at least
        if not split:  # random arrivals: hold the p99s, not only the mean step
            tl = tails(dep, eff, wl, "Server")
            ttft_s, tpot_s = t.ttft_ms / 1e3, 1 / t.tokens_per_user
            held = tl.held(ttft_s, tpot_s)
            if held <= 0:
                off = _lightest_miss(tl, ttft_s, tpot_s)
                why = min(
                    why,
                    (
                        off,
                        f"{_shape(dep)} {prec.upper()}: the p99 TTFT or TPOT misses "
                        f"the target {off:.1f}x even at the lightest load",
                    ),
                )
                continue
            cap, _ = tl.capacity(ttft_s, tpot_s)
            replica = _p99_derated(dep, eff, bench, replica, cap)
            # Never more per replica than keeps its own p99s on target: the
            # calibrated rate may exceed the analytic capacity at benchmark-like
            # targets, but an option whose p99s miss is not feasible.
            floor = max(floor, math.ceil(t.tokens_per_s / held))
        replicas = max(floor, math.ceil(t.tokens_per_s / replica))
        need = dep.tp * replicas
        if best is None or _rank(need, dep) < _rank(_need(best, t), best[0]):
            best = (dep, replica, batch, step, split, replicas)
    return best if best is not None else why


def _shape(dep: Deployment) -> str:
    """A replica shape as a plan's reasons name it."""
    if dep.stages > 1 and not dep.ep:
        return f"TP{dep.scaleup} x PP{dep.stages}"
    return f"TP{dep.tp}"


def _lightest_miss(tl: Tails, ttft_s: float, tpot_s: float) -> float:
    """How far off the lightest load's p99s are (1 = on target; inf: no batch)."""
    if tl.batch.size == 0:  # not even one sequence fits
        return math.inf
    return float(np.min(np.maximum(tl.ttft_p99_s / ttft_s, tl.tpot_p99_s / tpot_s)))


def _p99_capacity(
    dep: Deployment, eff: Efficiency, wl: Workload, ttft_ms: float, tpot_ms: float
) -> float:
    """Most tokens/s one replica serves with p99 TTFT and TPOT on target under
    random arrivals."""
    tl = tails(dep, eff, wl, "Server")
    if tl.batch.size == 0:
        return 0.0
    cap, _ = tl.capacity(ttft_ms / 1e3, tpot_ms / 1e3)
    return cap


def _p99_derated(
    dep: Deployment, eff: Efficiency, bench: Workload, calibrated: float, cap: float
) -> float:
    """The calibrated replica rate where random arrivals let the p99s hold.

    ``cap`` is the p99 capacity for these targets. At the benchmark's own
    lengths and bounds the calibration already holds its p99s (published rows
    show it), so the calibrated rate, scaled by this capacity over the
    benchmark's, also counts; the larger of that and ``cap``, never above the
    calibrated rate. A benchmark-like plan is the calibrated one.
    """
    bench_cap = _p99_capacity(dep, eff, bench, bench.ttft_ms, bench.tpot_ms)
    scaled = calibrated * cap / bench_cap if bench_cap > 0 else 0.0
    return min(calibrated, max(cap, scaled))


def _rank(need: int, dep: Deployment) -> tuple[int, bool, int]:
    """Fewest accelerators first; on a tie a replica inside one scale-up domain,
    then the larger one (the same accelerators with shorter prefills and steps:
    more margin on the p99s)."""
    return need, dep.stages > 1, -dep.tp


def _need(shape: Shape, t: Targets) -> int:
    return shape[0].tp * shape[5]


def scenario_for(t: Targets, base: Workload) -> str:
    """Interactive when the TPOT target is as tight as the benchmark's Interactive
    bound (its calibrated derate applies), else Server."""
    tpot = 1000.0 / t.tokens_per_user
    bound = base.interactive_tpot_ms
    return "Interactive" if bound is not None and tpot <= bound * 1.01 else "Server"


def _option(
    acc: Accelerator,
    arch: ModelArch,
    prec: str,
    t: Targets,
    stack: str,
    disaggregated: bool = False,
    fit: str | None = None,
    round_: str = "",
) -> Option | Why:
    base = get_workload(arch.key)
    eff = efficiency_for(
        acc.key,
        prec,
        stack=stack,
        benchmark=base.key,
        scenario=scenario_for(t, base),
        coefficients=load_coefficients(fit) if fit else None,
        round_=round_,
    )
    level, anchors = plan_level(fit, base.key, scenario_for(t, base), acc.key, stack)
    eff = dataclasses.replace(eff, server=eff.server * level)
    bounds = base.limits(scenario_for(t, base))
    assert bounds is not None  # scenario_for returns Server or Interactive
    bench = dataclasses.replace(base, ttft_ms=bounds[0], tpot_ms=bounds[1])
    got = _best_shape(acc, arch, prec, t.workload(base), eff, t, disaggregated, bench)
    if len(got) == 2:  # a miss: (how far off, why)
        return got
    dep, replica_tok_s, batch, step, split, _ = got
    n = _need(got, t)
    replicas = n // dep.tp
    if n > MAX_ACCELERATORS:
        return (
            n / MAX_ACCELERATORS,
            f"needs {n} accelerators (more than {MAX_ACCELERATORS})",
        )
    price = prices().get(acc.key)
    usd_h = n * price[0] if price else None
    tok_s = t.tokens_per_s
    ttft_s, tpot_s = prefill_s(dep, eff, t.isl) + step, step
    if not split:  # p99 at the planned load per replica
        ttft_s, tpot_s = tails(dep, eff, t.workload(base), "Server").at_rate(
            tok_s / replicas
        )
    lo, hi = BAND
    return Option(
        stack=stack,
        accelerator=acc.key,
        precision=prec,
        tp=dep.tp,
        batch_per_replica=batch,
        replicas=replicas,
        accelerators=n,
        tpot_ms=tpot_s * 1e3,
        ttft_ms=ttft_s * 1e3,
        tokens_per_s=tok_s,
        usd_per_hour=usd_h,
        usd_per_mtok=usd_h / (tok_s * 3600) * 1e6 if usd_h else None,
        tokens_per_joule=tok_s / (n * acc.tdp_w) if acc.tdp_w else None,
        accelerators_band=(
            dep.tp * max(1, math.ceil(t.tokens_per_s / (replica_tok_s * hi))),
            dep.tp * max(1, math.ceil(t.tokens_per_s / (replica_tok_s * lo))),
        ),
        expert_parallel=dep.ep,
        disaggregated=split,
        basis="anchored" if anchors else "modelled",
        anchors=named(anchors),
        anchor_count=len(anchors),
    )


def _cost_key(o: Option) -> tuple[float, int]:
    return (o.usd_per_hour if o.usd_per_hour is not None else math.inf, o.accelerators)


def plan_accelerator(
    acc_name: str,
    model: str,
    t: Targets,
    precision: str | None = None,
    *,
    stack: str | None = None,
    disaggregated: bool = False,
    fit: str | None = None,
    round_: str = "",
) -> Option | Infeasible:
    """The cheapest feasible option on one accelerator type, or why there is none.

    ``disaggregated`` also considers prefill-only and decode-only replica pools;
    ``fit`` names the coefficients (default: the shipped fit of every round);
    ``stack`` defaults to the one the part usually runs (``usual_stack``);
    ``round_`` plans with that round's software (default: mature software, as
    a plan for today)."""
    acc, arch = get_accelerator(acc_name), get_model(model)
    stack = check_stack(stack or acc.usual_stack)
    precs = (
        [precision] if precision else [p for p in PRECISIONS if runs_at(acc, arch, p)]
    )
    found: list[Option] = []
    misses: list[Why] = []
    for prec in precs:
        if not runs_at(acc, arch, prec):
            misses.append((math.inf, f"{acc.name} has no {prec.upper()} rate"))
            continue
        got = _option(acc, arch, prec, t, stack, disaggregated, fit, round_)
        (found.append(got) if isinstance(got, Option) else misses.append(got))
    if found:
        return min(found, key=_cost_key)
    reason = min(misses)[1] if misses else "no configuration"
    if acc.pcie_only and " x PP" in reason:  # a known limit, said where it decides
        reason += "; replicas of PCIe cards beyond one node's 8 are pipeline stages"
    return Infeasible(acc.key, reason)


def check_round(round_: str) -> str:
    """``round_`` if empty or an MLPerf round name ("v5.1"); else a one-line ConfigError."""
    if round_ and not re.fullmatch(r"v\d+\.\d+", round_):
        raise ConfigError(
            f"Unknown round {round_!r}; use an MLPerf round such as v5.1 (the "
            "round whose software to plan with), or leave it out for mature software."
        )
    return round_


def plan(
    model: str,
    t: Targets,
    *,
    precision: str | None = None,
    accelerator_names: list[str] | None = None,
    disaggregated: bool = False,
    fit: str | None = None,
    stack: str | None = None,
    round_: str = "",
) -> list[Option | Infeasible]:
    """Per accelerator type, the cheapest option (sorted: cheapest first, then
    infeasible); each part on ``stack``, or on the one it usually runs; with
    ``round_``'s software (default: mature software)."""
    get_model(model)
    check_round(round_)
    if precision is not None and precision not in PRECISION_BYTES:
        known = ", ".join(p for p in PRECISION_BYTES if p != "fp32")
        raise ConfigError(f"Unknown precision {precision!r}; use one of: {known}.")
    names = accelerator_names or sorted(
        k for k, a in accelerators().items() if a.kind == "gpu"
    )
    rows = [
        plan_accelerator(
            n,
            model,
            t,
            precision,
            stack=stack,
            disaggregated=disaggregated,
            fit=fit,
            round_=round_,
        )
        for n in names
    ]
    opts = sorted((r for r in rows if isinstance(r, Option)), key=_cost_key)
    return [*opts, *(r for r in rows if isinstance(r, Infeasible))]
