"""Capacity planner: the cheapest (precision, TP, replicas) per accelerator meeting targets.

For ``users`` concurrent streams at ``tokens_per_user`` tok/s each (TPOT target
``1 / tokens_per_user``), a replica carries the largest batch whose steady-state
step (decode plus the amortised prefill of arriving prompts) meets the TPOT
target and whose KV cache holds it; replicas = ceil(users / batch) (spec
section 3.1 "Serving"). Costs and energy are derived figures, not measurements.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.calibrate import default_report, efficiency_for
from infermeter.perfmodel.roofline import (
    Deployment,
    Efficiency,
    FloatArray,
    prefill_s,
    step_time_s,
)
from infermeter.perfmodel.specs import (
    Accelerator,
    ModelArch,
    accelerators,
    get_accelerator,
    get_model,
    get_workload,
)

TP_SIZES = (1, 2, 4, 8)
PRECISIONS = ("fp4", "fp8", "fp16")


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


@dataclass(frozen=True, slots=True)
class Option:
    """One feasible configuration of one accelerator type (predicted, derived)."""

    accelerator: str
    precision: str
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


@dataclass(frozen=True, slots=True)
class Infeasible:
    """Why no configuration of an accelerator type meets the targets."""

    accelerator: str
    reason: str


@lru_cache(maxsize=1)
def prices() -> dict[str, tuple[float, str, str]]:
    """$/accelerator-hour, source and date per accelerator (a dated snapshot)."""
    text = (
        resources.files("infermeter.perfmodel")
        .joinpath("data")
        .joinpath("prices.toml")
        .read_text()
    )
    return {
        k: (float(v["usd_per_hour"]), str(v["source"]), str(v["date"]))
        for k, v in tomllib.loads(text).items()
    }


def _steady_step_s(
    dep: Deployment, eff: Efficiency, batch: FloatArray, t: Targets
) -> FloatArray:
    ctx = np.full_like(batch, t.isl + t.osl / 2.0)
    return step_time_s(
        dep,
        eff,
        decode=batch,
        context=ctx,
        prefill=batch * t.isl / t.osl,
        prefill_context=np.full_like(batch, t.isl / 2.0),
    )


def _best_batch(dep: Deployment, eff: Efficiency, t: Targets) -> tuple[int, float]:
    """Largest batch meeting the TPOT target within KV capacity, and its step time."""
    kv_batch = int(dep.free_bytes // (dep.kv_bytes_per_token * (t.isl + t.osl)))
    cap = min(kv_batch, dep.max_batch)
    if cap < 1:
        return 0, math.inf
    batch = np.arange(1, cap + 1, dtype=float)
    step = _steady_step_s(dep, eff, batch, t)
    ok = np.nonzero(step <= 1.0 / t.tokens_per_user)[0]
    if ok.size == 0:
        return 0, float(step[0])
    return int(batch[ok[-1]]), float(step[ok[-1]])


def _option(
    acc: Accelerator,
    arch: ModelArch,
    prec: str,
    tp: int,
    t: Targets,
    band: tuple[float, float],
) -> Option | str:
    dep = Deployment(acc, arch, prec, tp)
    try:
        dep.check_fits(t.isl + t.osl)
    except ConfigError as exc:
        return str(exc)
    eff = efficiency_for(acc.key, prec, benchmark=get_workload(arch.key).key)
    batch, step = _best_batch(dep, eff, t)
    if batch < 1:
        return f"TP{tp} {prec.upper()}: one stream already takes {step * 1e3:.0f} ms per token"
    ttft = prefill_s(dep, eff, t.isl) + step
    if ttft * 1e3 >= t.ttft_ms:
        return f"TP{tp} {prec.upper()}: prefill alone takes {ttft * 1e3:.0f} ms"
    replicas = math.ceil(t.users / batch)
    n = replicas * tp
    tok_s = t.users * t.tokens_per_user
    price = prices().get(acc.key)
    usd_h = n * price[0] if price else None
    lo, hi = band  # published / predicted: low ratio -> more accelerators needed
    return Option(
        accelerator=acc.key,
        precision=prec,
        tp=tp,
        batch_per_replica=batch,
        replicas=replicas,
        accelerators=n,
        tpot_ms=step * 1e3,
        ttft_ms=ttft * 1e3,
        tokens_per_s=tok_s,
        usd_per_hour=usd_h,
        usd_per_mtok=usd_h / (tok_s * 3600) * 1e6 if usd_h else None,
        tokens_per_joule=tok_s / (n * acc.tdp_w) if acc.tdp_w else None,
        accelerators_band=(
            tp * math.ceil(t.users / max(1, int(batch * hi))),
            tp * math.ceil(t.users / max(1, int(batch * lo))),
        ),
    )


def _cost_key(o: Option) -> tuple[float, int]:
    return (o.usd_per_hour if o.usd_per_hour is not None else math.inf, o.accelerators)


def plan_accelerator(
    acc_name: str, model: str, t: Targets, precision: str | None = None
) -> Option | Infeasible:
    """The cheapest feasible option on one accelerator type, or why there is none."""
    acc, arch = get_accelerator(acc_name), get_model(model)
    precs = [precision] if precision else [p for p in PRECISIONS if acc.supports(p)]
    band = default_report().error_band()
    found: list[Option] = []
    reasons: list[str] = []
    for prec in precs:
        if not acc.supports(prec):
            reasons.append(f"{acc.name} has no {prec.upper()} rate")
            continue
        for tp in TP_SIZES:
            got = _option(acc, arch, prec, tp, t, band)
            (found.append(got) if isinstance(got, Option) else reasons.append(got))
    if found:
        return min(found, key=_cost_key)
    return Infeasible(acc.key, reasons[-1] if reasons else "no configuration")


def plan(
    model: str,
    t: Targets,
    *,
    precision: str | None = None,
    accelerator_names: list[str] | None = None,
) -> list[Option | Infeasible]:
    """Per accelerator type, the cheapest option (sorted: cheapest first, then infeasible)."""
    get_model(model)
    names = accelerator_names or sorted(accelerators())
    rows = [plan_accelerator(n, model, t, precision) for n in names]
    opts = sorted((r for r in rows if isinstance(r, Option)), key=_cost_key)
    return [*opts, *(r for r in rows if isinstance(r, Infeasible))]
