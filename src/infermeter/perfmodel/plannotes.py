"""Notes a plan carries: where it extrapolates past the published rows the fit
read, where its inputs are assumed, and how much evidence the effects it inherits
rest on. Each returns one line or None (``infermeter plan`` prints them)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from infermeter.perfmodel.calibrate import load_coefficients
from infermeter.perfmodel.fit import (
    Coefficients,
    benchmark_age,
    pair_key,
    scenario_key,
)
from infermeter.perfmodel.planner import Infeasible, Option, Targets, scenario_for
from infermeter.perfmodel.specs import (
    WEIGHT_ONLY_MATH,
    get_accelerator,
    get_model,
    get_workload,
    runs_weight_only,
)


def calibration_note(model: str, t: Targets, fit: str | None = None) -> str | None:
    """Why a plan is extrapolated, or None: the fit read no row of the benchmark, or
    none with a TPOT bound as tight as the target's (its speed factor, fitted on
    large batches, then also sets small, memory-bound batches)."""
    wl = get_workload(model)
    coef = load_coefficients(fit) if fit else load_coefficients()
    if f"bench:{wl.key}" not in coef.values:
        return (
            f"extrapolated: the fit ({coef.label}) read no published {wl.key} row; "
            "its speed comes from the part, stack and precision alone"
        )
    seen = [
        limits[1]
        for sc in ("Server", "Interactive")
        if _read_scenario(coef, wl.key, sc) and (limits := wl.limits(sc)) is not None
    ]
    tpot = 1000.0 / t.tokens_per_user
    if seen and tpot >= min(seen):
        return None
    tightest = f"{min(seen):g} ms" if seen else "none: Offline rows only"
    return (
        f"extrapolated: {tpot:.0f} ms per token is tighter than the TPOT bound of any "
        f"published {wl.key} row the fit ({coef.label}) read (tightest: {tightest}); "
        "the speed fitted at large batches also sets these small, memory-bound ones"
        + _workload_gap(coef, wl.key)
    )


def _read_scenario(coef: Coefficients, benchmark: str, scenario: str) -> bool:
    """Whether the fit read ``benchmark``'s ``scenario`` rows: its support says so;
    files without that entry, by the scenario's effect (Interactive had one of its
    own until 2026-11-28)."""
    if coef.support.get(scenario_key(benchmark, scenario)):
        return True
    return f"scenbench:{scenario}|{benchmark}" in coef.values


def first_round_note(
    model: str, fit: str | None = None, round_: str = ""
) -> str | None:
    """Say so when a plan for a later round than the benchmark's first leaves out
    the Server level the fit learned from that first round alone (its first
    Server harnesses: docs/notes/perfmodel-validation.md, "First-round Server levels")."""
    wl = get_workload(model)
    coef = load_coefficients(fit) if fit else load_coefficients()
    level = coef.values.get(f"scenbench:Server|{wl.key}|first")
    if level is None or abs(level) < NOTABLE or benchmark_age(wl.key, round_) == 0:
        return None
    return (
        f"mature software: {wl.key}'s own Server level, fitted on its first round "
        f"({wl.introduced}) alone, is left out (x{math.exp(level):.2f} of throughput "
        f"there; later rounds ran faster); --round {wl.introduced} plans with that "
        "round's software"
    )


SLOW_WORKLOAD = 0.5  # a benchmark's own speed factor worth a warning below this


def workload_speed(coef: Coefficients, benchmark: str) -> float:
    """The speed factor a fit gives the benchmark itself (its own effect, and the
    mixture-of-experts one for MoE models), beside the part's and the stack's."""
    names = [f"bench:{get_workload(benchmark).key}"]
    if get_model(benchmark).is_moe:
        names.append("moe:moe")
    return math.exp(sum(coef.values.get(n, 0.0) for n in names))


def _workload_gap(coef: Coefficients, benchmark: str) -> str:
    """A benchmark far below the physics at large batches (its own speed effects
    under ``SLOW_WORKLOAD``): if that gap is compute-side, small memory-bound
    batches run faster than the plan assumes (measured once: docs/notes/benchmarks-log.md)."""
    factor = workload_speed(coef, benchmark)
    if factor >= SLOW_WORKLOAD:
        return ""
    return (
        f"; the fit runs {benchmark} at {factor:.2f}x the speed of other benchmarks "
        "on the same parts, a gap seen at large batches: if it is compute-side, "
        "this plan may need several times fewer accelerators"
    )


def pools_note(model: str, t: Targets, disaggregated: bool) -> str | None:
    """Say so when an aggregated-only plan runs at Interactive-tight TPOT: there
    prefill/decode pools' decode steps carry no prefill, so pools may need fewer
    accelerators (published systems of several boards ran them)."""
    if disaggregated or scenario_for(t, get_workload(model)) != "Interactive":
        return None
    return (
        "aggregated only: at Interactive-tight TPOT prefill/decode pools keep "
        "prefill out of the decode steps and may need fewer accelerators; "
        "--disaggregated also tries them"
    )


def lengths_note(model: str, isl_given: bool) -> str | None:
    """Say so when the plan runs on the benchmark's assumed mean input length (the
    dataset's per-sample lengths were not published in the sources read)."""
    wl = get_workload(model)
    if isl_given or not wl.isl_assumed:
        return None
    return (
        f"assumed: {wl.key}'s mean input of {wl.isl_mean:,.0f} tokens is not "
        "published in the sources read; pass --isl with your prompts' mean"
    )


def weight_only_note(model: str, rows: Sequence[Option | Infeasible]) -> str | None:
    """Say so when a plan holds the model's FP4 experts on parts without FP4 math:
    they multiply in 16-bit there (``runs_weight_only``), a mode no published row
    the fit read ran."""
    arch = get_model(model)
    parts = _unique(
        o.accelerator
        for o in rows
        if isinstance(o, Option)
        and runs_weight_only(get_accelerator(o.accelerator), arch, o.precision)
    )
    if not parts:
        return None
    return (
        f"weight-only: FP4 on {', '.join(parts)} keeps {arch.name}'s FP4 experts "
        f"and multiplies them in {WEIGHT_ONLY_MATH.upper()} (the part has no FP4 "
        "math); no published row the fit read ran this way"
    )


THIN = 1  # published systems an effect rests on at most, to be called thin evidence
# A thin precision effect under this (log) changes a plan too little to mention.
NOTABLE = 0.05


def evidence_note(
    rows: Sequence[Option | Infeasible], fit: str | None = None, model: str = ""
) -> str | None:
    """Say so when a plan's parts have no published row (their speed comes from
    their chip generation's rows, or from every part's), when no published row ran
    ``model``'s benchmark on a part that has rows of others (docs/notes/perfmodel-validation.md,
    "Outside the rows it fits", measures such pairs), or when its precision's
    fitted effect rests on one published system's rows. None for coefficient
    files that do not record their support (older ones)."""
    coef = load_coefficients(fit) if fit else load_coefficients()
    if not coef.support:
        return None
    options = [r for r in rows if isinstance(r, Option)]
    unseen = _unique(_unseen_part(coef, o.accelerator) for o in options)
    unpaired = _unique(_unpaired(coef, model, o.accelerator) for o in options)
    thin = _unique(_thin_precision(coef, o.precision) for o in options)
    parts = []
    if unseen:
        parts.append("the fit read no published row of " + ", ".join(unseen))
    if unpaired:
        bench = get_workload(model).key
        parts.append(
            f"no published {bench} row ran on {', '.join(unpaired)} (the speed "
            f"joins {bench}'s rows on other parts with that part's other "
            "benchmarks; docs/perfmodel.md checks such pairs against "
            "TensorRT-LLM's own figures)"
        )
    if thin:
        parts.append(", ".join(thin) + " rests on one published system's rows")
    return "thin evidence: " + "; ".join(parts) if parts else None


def _unseen_part(coef: Coefficients, part: str) -> str | None:
    acc = get_accelerator(part)
    if coef.support.get(f"part:{acc.key}"):
        return None
    kin = f"other {acc.arch}" if coef.support.get(f"arch:{acc.arch}") else "all"
    return f"{acc.key} (speed from {kin} parts' rows)"


def _unpaired(coef: Coefficients, model: str, part: str) -> str | None:
    """``part`` when it has published rows and the benchmark has rows, but no
    published system ran the benchmark on it."""
    if not model:
        return None
    acc, bench = get_accelerator(part), get_workload(model).key
    seen_part = coef.support.get(f"part:{acc.key}")
    seen_bench = coef.support.get(f"bench:{bench}")
    if not (seen_part and seen_bench) or coef.support.get(pair_key(bench, acc.key)):
        return None
    return acc.key


def _thin_precision(coef: Coefficients, precision: str) -> str | None:
    name = f"prec:{precision}"
    effect = coef.values.get(name, 0.0)
    if coef.support.get(name, 0) > THIN or abs(effect) < NOTABLE:
        return None
    return f"{precision.upper()}'s fitted effect ({math.expm1(effect) * 100:+.0f} %)"


def _unique(items: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i is not None))
