"""A benchmark's first-round Server level: kept apart, or carried to later rounds.

Since 2026-11-28 the Server level a benchmark's own rows teach in its first round
is an effect of its own (``scenbench:Server|{benchmark}|first``,
``fit.scenario_features``): a plan (mature software) or a later round does not
read it. ``carried`` is the structure before, where one level served every round;
``shared first round`` adds a Server level per benchmark age that every benchmark
shares (tried, not shipped: docs/perfmodel.md, "First-round Server levels").
For each structure this refits the model on the published v4.1 + v5.1 rows and
prints:

1. the line ``perfmodel_ridge.validate`` prints (loss over all rows and over the
   v4.1 rows, round out, system out, benchmark out, held-out Interactive /
   DeepSeek-R1 / 405B medians) and the fitted Server levels;
2. DeepSeek-R1 tokens/s per GPU on the systems v5.1 published it on, as the fit
   predicts them with v5.1's software and with mature software (a plan's), next
   to the published v5.1 rows (result IDs) and NVIDIA's statement on v6.0 (section
   "First-round Server levels" of docs/perfmodel.md);
3. the planner check: every v5.1 Server/Interactive row planned at its
   benchmark's bounds with its round's software (``plan_published_row``),
   planned / published accelerators;
4. given a later round's results file (``perfmodel_next_round.py``), that round's
   median / p90 and its DeepSeek-R1 rows' median signed error per scenario;

and last, the structure constants' loss per value on the shipped structure
(``perfmodel_finite_run.constants``).

Predictions are derived figures; the published values are MLPerf results.
Needs ../shared.

    .venv/bin/python benchmarks/perfmodel/perfmodel_first_round.py [PATH/summary.json]
"""

from __future__ import annotations

import math
import statistics
import sys
from contextlib import ExitStack
from dataclasses import replace

import numpy as np
from perfmodel_finite_run import constants
from perfmodel_interactive import swap
from perfmodel_ridge import header, load_rounds, validate

from infermeter.perfmodel import calibrate, fit
from infermeter.perfmodel.calibrate import (
    Coefficients,
    calibrate_rows,
    efficiency_for,
    load_results,
    predict_rows,
    stats,
)
from infermeter.perfmodel.plancheck import plan_published_row
from infermeter.perfmodel.planner import Option
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import SystemSpec, throughput_grid

STRUCTURES = ("first-round level", "carried", "shared first round")
DS_SYSTEMS = (("b200", 8), ("gb200", 72), ("gb300", 72), ("gb300", 8))


def apply(structure: str, stack: ExitStack) -> None:
    """``carried``: the first-round level is the benchmark's one level; ``shared
    first round``: also a Server level per benchmark age shared by every benchmark
    (``scenage:0`` for a first round, as ``age:`` is for speed)."""
    if structure == "first-round level":
        return
    base = fit.scenario_features
    fit.PRIOR_SD.setdefault("scenage", fit.PRIOR_SD["scenbench"])

    def features(
        scenario: str, stk: str, benchmark: str, part: str, round_: str = ""
    ) -> tuple[str, ...]:
        out = base(scenario, stk, benchmark, part, round_)
        if structure == "carried":
            return tuple(name.removesuffix("|first") for name in out)
        age = fit.benchmark_age(benchmark, round_)
        return (*out, f"scenage:{age}") if out else out

    for module in (fit, calibrate):
        stack.enter_context(swap(module, "scenario_features", features))


def deepseek(coef: Coefficients) -> None:
    """DeepSeek-R1 per GPU: v5.1's software, mature software, published v5.1."""
    published: dict[tuple[str, int, str], list[str]] = {}
    for r in load_results(["v5.1"]).rows:
        if r.benchmark == "deepseek-r1":
            key = (r.accelerator, r.count, r.scenario)
            published.setdefault(key, []).append(
                f"{r.tokens_per_s / r.count:,.0f} ({r.result_id})"
            )
    wl, arch = get_workload("deepseek-r1"), get_model("deepseek-r1")
    for part, count in DS_SYSTEMS:
        spec = SystemSpec(get_accelerator(part), count, arch, "fp4")
        for scenario in ("Offline", "Server"):
            got = []
            for round_ in ("v5.1", ""):
                eff = efficiency_for(
                    part, "fp4", stack="trt-llm", benchmark="deepseek-r1",
                    coefficients=coef, scenario="Server", round_=round_,
                )  # fmt: skip
                grid = throughput_grid(
                    spec, wl, scenario, eff, np.asarray([1.0]), disaggregated=count > 8
                )
                derate = eff.server if scenario == "Server" else 1.0
                got.append(f"{float(grid[0]) * derate / count:7,.0f}")
            pub = ", ".join(published.get((part, count, scenario), ["-"]))
            print(
                f"  {count:2d}x {part:6s} {scenario:7s} v5.1 software {got[0]}, "
                f"mature {got[1]} per GPU; published v5.1 {pub}"
            )


def planner_check(coef: Coefficients) -> None:
    """Planned / published accelerators of every v5.1 Server/Interactive row, with
    the row's round's software and with mature software (a round-less row)."""
    rows = [r for r in load_results(["v5.1"]).rows if r.scenario != "Offline"]
    for label, mature in (("their round's", False), ("mature", True)):
        with swap(calibrate, "load_coefficients", lambda name="": coef):
            x = []
            for r in rows:
                got = plan_published_row(replace(r, round="") if mature else r)
                n = got.accelerators if isinstance(got, Option) else math.nan
                x.append(n / r.count)
        ratio = np.asarray(x)
        lo, hi = np.nanpercentile(ratio, [5, 95])
        within = int(np.sum(np.abs(np.log(ratio)) <= math.log(2)))
        print(
            f"  planner check, {len(rows)} v5.1 rows, {label} software: median "
            f"{np.nanmedian(ratio):.2f}, p90 {np.nanpercentile(ratio, 90):.2f} "
            f"(5th-95th {lo:.2f}-{hi:.2f}), within 2x {within}"
        )


def later_round(path: str, coef: Coefficients) -> None:
    out = predict_rows(load_results([path]), coef)
    s = stats("", out.predictions)
    line = f"  later round: {len(out.predictions)} rows, {s.median * 100:.1f} % / "
    line += f"{s.p90 * 100:.1f} %"
    for scenario in ("Offline", "Server", "Interactive"):
        errs = [
            p.error
            for p in out.predictions
            if p.row.benchmark == "deepseek-r1" and p.row.scenario == scenario
        ]
        if errs:
            line += f"; DeepSeek-R1 {scenario} {len(errs)} rows "
            line += f"{statistics.median(errs) * 100:+.1f} %"
    print(line)


def main(later: str | None) -> None:
    both, v41, v51 = load_rounds()
    print(header("structure         "))
    for structure in STRUCTURES:
        with ExitStack() as stack:
            apply(structure, stack)
            text, _, _ = validate(both, v41, v51)
            print(f"{structure:18s} {text}")
            coef = calibrate_rows(both.rows, "v4.1 + v5.1")
            levels = {
                name.removeprefix("scenbench:"): round(value, 3)
                for name, value in sorted(coef.values.items())
                if name.startswith(("scenbench:", "scenage:"))
            }
            print(f"  Server levels: {levels}")
            deepseek(coef)
            planner_check(coef)
            if later:
                later_round(later, coef)
    constants(both.rows)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
