"""Interactive's derate: the fit's own loss and every validation, per structure.

An Interactive row is a Server run with tighter bounds: its derate is Server's
(``scen:Server``, the stack's ``scenstack:Server|...``, the benchmark's) plus an
Interactive effect and one per benchmark (``fit.scenario_features``). Until
2026-11-28 each stack also carried its own Interactive effect. This refits the
model on the published v4.1 + v5.1 rows under each structure below and prints
the line ``perfmodel_ridge.validate`` prints (loss over all rows and over the
v4.1 rows, round out, system out, benchmark out, held-out Interactive /
DeepSeek-R1 / 405B medians). Given a later round's results file
(``perfmodel_next_round.py``), it adds that round's median / p90, the same
without DeepSeek-R1, and its Interactive median under each structure's fit.
Then, for the structures the docs discuss row by row, v5.1's Interactive rows
per system as a fit of v4.1 predicts them, the held-out Interactive rows per
system and the held-out rows off by half or more; last, the structure
constants' loss per value on the shipped structure
(``perfmodel_finite_run.constants``). Needs ../shared.

Only the shipped structure is in ``src``; each other one is a change applied
here for its own refit (docs/perfmodel.md, "Interactive: no stack effect of its
own", says why none is kept):

- ``stack``: each stack's own Interactive effect (the structure before);
- ``no board pools``: the published-row physics tries prefill/decode pools only
  on systems of more than 8 accelerators;
- ``precision SD``: an Interactive effect per precision, prior SD;
- ``span``: a speed effect for a model that must span cards without a scale-up
  link (the weights exceed one card, the part's domain is 1);
- ``grid N``: N batch points instead of 40;
- ``overlap``: a mixed step's kernel launches overlap its GPU work (the longer
  of the two, not their sum);
- ``NAME=V``: a structure constant at another value.

    .venv/bin/python benchmarks/perfmodel_interactive.py [PATH/summary.json]
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import numpy as np
import perfmodel_ridge
from perfmodel_finite_run import constants
from perfmodel_ridge import header, load_rounds, validate

from infermeter.errors import ConfigError
from infermeter.perfmodel import calibrate, finite_run, fit, roofline, throughput
from infermeter.perfmodel.calibrate import (
    Validation,
    calibrate_rows,
    load_results,
    predict_rows,
    stats,
)
from infermeter.perfmodel.specs import get_accelerator, get_model

ONE_BOARD = 8
CARD_SHARE = 0.9  # of a card's memory the weights may fill (the reserve, as Deployment)

STRUCTURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("stack effects (before)", ("stack",)),
    ("shipped", ()),
    ("shipped, no pools on one board", ("no board pools",)),
    ("Interactive per precision, 0.1", ("precision 0.1",)),
    ("Interactive per precision, 0.2", ("precision 0.2",)),
    ("  and no pools on one board", ("precision 0.2", "no board pools")),
    ("span without a link", ("span",)),
    ("batch grid 80", ("grid 80",)),
    ("batch grid 160", ("grid 160",)),
    ("launches overlapped", ("overlap",)),
    ("ridge p 1.25", ("RIDGE_P=1.25",)),
    ("TPOT headroom 0.80", ("TPOT_HEADROOM=0.8",)),
    ("TPOT spread 0.75", ("TPOT_SPREAD=0.75",)),
    ("  ridge p 1.25, no board pools", ("RIDGE_P=1.25", "no board pools")),
    ("  headroom 0.80, no board pools", ("TPOT_HEADROOM=0.8", "no board pools")),
    ("  spread 0.75, no board pools", ("TPOT_SPREAD=0.75", "no board pools")),
)
DETAILED = (
    "stack effects (before)",
    "shipped",
    "shipped, no pools on one board",
    "span without a link",
)
CONSTANT_MODULES = {"RIDGE_P": roofline}


@contextmanager
def _swap(module: object, name: str, value: object) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def _stack_effects(stack: ExitStack) -> None:
    base = fit.scenario_features

    def features(scenario: str, stk: str, benchmark: str, part: str) -> tuple[str, ...]:
        out = base(scenario, stk, benchmark, part)
        if scenario == "Interactive":
            out += (f"scenstack:Interactive|{fit.effect_stack(part, stk)}",)
        return out

    stack.enter_context(_swap(fit, "scenario_features", features))


def _no_board_pools(stack: ExitStack) -> None:
    base = fit.physics_grid

    def grid(row, speed=None, *, disaggregated=True):  # type: ignore[no-untyped-def]
        return base(row, speed, disaggregated=disaggregated and row.count > ONE_BOARD)

    stack.enter_context(_swap(fit, "physics_grid", grid))


def _per_precision(stack: ExitStack, sd: float) -> None:
    base = fit.prepare

    def prepare(rows):  # type: ignore[no-untyped-def]
        out, failed = base(rows)
        for i, p in enumerate(out):
            if p.row.scenario == "Interactive":
                part = p.row.parts[0][0] if p.row.parts else p.row.accelerator
                name = (
                    f"scenprec:Interactive|{fit.precision_for(part, p.row.precision)}"
                )
                out[i] = dataclasses.replace(p, scenario=(*p.scenario, name))
        return out, failed

    fit.PRIOR_SD["scenprec"] = sd
    stack.callback(fit.PRIOR_SD.pop, "scenprec")
    stack.enter_context(_swap(fit, "prepare", prepare))
    stack.enter_context(_swap(calibrate, "prepare", prepare))
    stack.enter_context(_swap(perfmodel_ridge, "prepare", prepare))  # its loss


def _spans(part: str, precision: str, benchmark: str) -> bool:
    acc = get_accelerator(part)
    prec = fit.weights_for(part, precision, benchmark)
    try:
        dep = roofline.Deployment(acc, get_model(benchmark), prec, 1)
    except ConfigError:
        return False
    cards = math.ceil(dep.weight_bytes / (acc.memory_bytes * CARD_SHARE))
    return cards > acc.scaleup_domain


def _span(stack: ExitStack) -> None:
    base = fit.speed_features

    def features(part, stk, precision, benchmark, **kw):  # type: ignore[no-untyped-def]
        out = base(part, stk, precision, benchmark, **kw)
        return (*out, "span:pcie") if _spans(part, precision, benchmark) else out

    fit.PRIOR_SD["span"] = 0.5
    stack.callback(fit.PRIOR_SD.pop, "span")
    stack.enter_context(_swap(fit, "speed_features", features))
    stack.enter_context(_swap(calibrate, "speed_features", features))


def _overlap(stack: ExitStack) -> None:
    base = roofline.step_time_s

    def step(dep, eff, **kw):  # type: ignore[no-untyped-def]
        gpu = base(dep, dataclasses.replace(eff, launch_per_layer_s=0.0), **kw)
        launches = np.where(
            kw["prefill"] > 0, dep.model.layers * eff.launch_per_layer_s, 0.0
        )
        return np.maximum(gpu, launches + eff.step_overhead_s)

    stack.enter_context(_swap(throughput, "step_time_s", step))
    stack.enter_context(_swap(finite_run, "step_time_s", step))


def apply(change: str, stack: ExitStack) -> None:
    """Apply one named change (module doc) until ``stack`` closes."""
    if change == "stack":
        _stack_effects(stack)
    elif change == "no board pools":
        _no_board_pools(stack)
    elif change.startswith("precision "):
        _per_precision(stack, float(change.split()[1]))
    elif change == "span":
        _span(stack)
    elif change.startswith("grid "):
        stack.enter_context(_swap(throughput, "_BATCH_POINTS", int(change.split()[1])))
    elif change == "overlap":
        _overlap(stack)
    else:
        name, value = change.split("=")
        module = CONSTANT_MODULES.get(name, throughput)
        stack.enter_context(_swap(module, name, float(value)))


def interactive_by_system(system: Validation) -> str:
    """Held-out Interactive rows: median signed error per system group."""
    groups: dict[str, list[float]] = defaultdict(list)
    for p in system.predictions:
        r = p.row
        if r.scenario == "Interactive":
            key = f"{r.benchmark} {r.count}x{r.accelerator} {r.stack}"
            groups[key].append(p.error * 100)
    return "\n".join(
        f"     {key:34s} {len(v):2d} rows  {statistics.median(v):+6.1f} %"
        for key, v in sorted(groups.items())
    )


def far_off(system: Validation) -> str:
    """Held-out rows off by half or more, worst first."""
    rows = sorted(
        (p for p in system.predictions if abs(p.error) >= 0.5),
        key=lambda p: -abs(p.error),
    )
    return "\n".join(
        f"     {p.error * 100:+7.1f} %  {p.row.benchmark} {p.row.scenario} "
        f"{p.row.count}x{p.row.accelerator} {p.row.stack} {p.row.precision} "
        f"{p.row.submitter} {p.row.round}"
        for p in rows
    )


def later_round(path: str) -> str:
    both = load_results(["v4.1", "v5.1"])
    got = predict_rows(load_results([path]), calibrate_rows(both.rows, "both"))
    o = got.overall()
    rest = [p for p in got.predictions if p.row.benchmark != "deepseek-r1"]
    inter = [p for p in got.predictions if p.row.scenario == "Interactive"]
    without = stats("", rest)
    return (
        f" | {o.median * 100:4.1f} / {o.p90 * 100:4.1f}, "
        f"without DeepSeek-R1 {without.median * 100:4.1f} / {without.p90 * 100:4.1f}, "
        f"Interactive {stats('', inter).median * 100:4.1f}"
    )


def main(later: str | None) -> None:
    both, v41, v51 = load_rounds()
    if later:
        load_results([later])  # a bad path fails here, before any table
    print(header(f"{'structure':32s}", later=bool(later)))
    details = []
    for name, changes in STRUCTURES:
        with ExitStack() as stack:
            for change in changes:
                apply(change, stack)
            t0 = time.perf_counter()
            text, out, system = validate(both, v41, v51)
            if later:
                text += later_round(later)
            print(f"{name:31s} {text}   ({time.perf_counter() - t0:.0f} s)")
            if name in DETAILED:
                ahead, held = interactive_by_system(out), interactive_by_system(system)
                details.append((name, ahead, held, far_off(system)))
    for name, ahead, inter, far in details:
        print(
            f"\n{name}: fit v4.1, v5.1's Interactive rows, median signed error per system"
        )
        print(ahead)
        print(f"{name}: held-out Interactive rows, median signed error per system")
        print(inter)
        print(f"{name}: held-out rows off by half or more\n{far}")
    print()
    constants(both.rows)  # re-measured on the shipped structure


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else None)
    except ConfigError as exc:  # ../shared absent, or the later round's file unreadable
        raise SystemExit(f"perfmodel_interactive: {exc}") from None
