"""Interactive's derate: the fit's own loss and every validation, per structure.

An Interactive row is a Server run with tighter bounds: since 2026-11-28 its
derate is Server's alone (``scen:Server``, the stack's, the benchmark's;
``fit.scenario_features``) and the physics carries the rest: the TPOT bound
(with ``TPOT_HEADROOM``, now set by the loss) limits the batch, and systems of
one board serve aggregated (``fit.ONE_BOARD``). This refits the model on the
published v4.1 + v5.1 rows under each structure below and prints the line
``perfmodel_ridge.validate`` prints (loss over all rows and over the v4.1 rows,
round out, system out, benchmark out, held-out Interactive / DeepSeek-R1 / 405B
medians). Given a later round's results file (``perfmodel_next_round.py``), it
adds that round's median / p90, the same without DeepSeek-R1, and its
Interactive median under each structure's fit. Then, for the structure before
and the shipped one, v5.1's Interactive rows per system as a fit of v4.1
predicts them, the held-out Interactive rows per system and the held-out rows
off by half or more; last, the structure constants' loss per value on the
shipped structure (``perfmodel_finite_run.constants``). Needs ../shared.

Only the shipped structure is in ``src``; each other one is a change applied
here for its own refit (docs/perfmodel.md, "Interactive: the physics carries
it", says why none is kept):

- ``levels``: an Interactive effect and one per benchmark (``scen:Interactive``,
  ``scenbench:Interactive|...``), as before 2026-11-28; ``scenario level`` and
  ``benchmark levels``: one of the two;
- ``board pools``: prefill/decode pools tried on boards too (every system);
- ``NAME=V``: a structure constant at another value.

The variants tried on the structure before (a stack's own Interactive effect,
one per precision, a PCIe-span speed effect, finer batch grids, overlapped
launches) are this script at b26f0d3.

    .venv/bin/python benchmarks/perfmodel/perfmodel_interactive.py [PATH/summary.json]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from perfmodel_finite_run import constants
from perfmodel_ridge import header, load_rounds, validate

from infermeter.errors import ConfigError
from infermeter.perfmodel import fit, roofline, throughput
from infermeter.perfmodel.calibrate import (
    Validation,
    calibrate_rows,
    load_results,
    predict_rows,
    stats,
)
from infermeter.perfmodel.specs import get_workload

BEFORE = ("levels", "board pools", "TPOT_HEADROOM=0.85")
STRUCTURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("before (levels, board pools, 0.85)", BEFORE),
    ("shipped", ()),
    ("Interactive levels", ("levels",)),
    ("scenario level only", ("scenario level",)),
    ("benchmark levels only", ("benchmark levels",)),
    ("pools on one board", ("board pools",)),
    ("  and Interactive levels", ("board pools", "levels")),
    ("headroom 0.85", ("TPOT_HEADROOM=0.85",)),
    ("ridge p 1.5, spread 0.5 (before)", ("RIDGE_P=1.5", "TPOT_SPREAD=0.5")),
)
DETAILED = ("before (levels, board pools, 0.85)", "shipped")
CONSTANT_MODULES = {"RIDGE_P": roofline}


@contextmanager
def swap(module: object, name: str, value: object) -> Iterator[None]:
    """``module.name`` is ``value`` until the context ends (a variant's refit)."""
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def _levels(stack: ExitStack, scenario_level: bool, bench_level: bool) -> None:
    base = fit.scenario_features

    def features(
        scenario: str, stk: str, benchmark: str, part: str, round_: str = ""
    ) -> tuple[str, ...]:
        out = base(scenario, stk, benchmark, part, round_)
        if scenario == "Interactive" and scenario_level:
            out += ("scen:Interactive",)
        if scenario == "Interactive" and bench_level:
            out += (f"scenbench:Interactive|{get_workload(benchmark).key}",)
        return out

    stack.enter_context(swap(fit, "scenario_features", features))


def apply(change: str, stack: ExitStack) -> None:
    """Apply one named change (module doc) until ``stack`` closes."""
    if change == "levels":
        _levels(stack, True, True)
    elif change == "scenario level":
        _levels(stack, True, False)
    elif change == "benchmark levels":
        _levels(stack, False, True)
    elif change == "board pools":
        stack.enter_context(swap(fit, "ONE_BOARD", 0))
    else:
        name, value = change.split("=")
        module = CONSTANT_MODULES.get(name, throughput)
        stack.enter_context(swap(module, name, float(value)))


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
