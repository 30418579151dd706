"""Interactive's derate: the fit's own loss and every validation, per structure.

An Interactive row is a Server run with tighter bounds: its derate is Server's
(``scen:Server``, the stack's ``scenstack:Server|...``, the benchmark's) plus an
Interactive effect and one per benchmark (``fit.scenario_features``). Until
2026-11-28 each stack also carried its own Interactive effect. This refits the
model on the published v4.1 + v5.1 rows under each structure and prints the
line ``perfmodel_ridge.validate`` prints (loss over all rows and over the v4.1
rows, round out, system out, benchmark out, held-out Interactive / DeepSeek-R1 /
405B medians), then the held-out Interactive rows per system. Given a later
round's results file (``perfmodel_next_round.py``), it also prints that round's
median / p90 and its Interactive median under each structure's fit. Last, the
structure constants' loss per value on the shipped structure
(``perfmodel_finite_run.constants``). Needs ../shared.

Structures (only the shipped one is in ``src``; the others are applied here):

- ``stack effects (before)``: each stack's own Interactive effect as well;
- ``shipped``: none;
- ``shipped, no pools on one board``: the published-row physics also stops
  trying prefill/decode pools on systems of up to 8 accelerators (tried, not
  kept: docs/perfmodel.md, "Interactive: no stack effect of its own").

    .venv/bin/python benchmarks/perfmodel_interactive.py [PATH/summary.json]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from perfmodel_finite_run import constants
from perfmodel_ridge import header, load_rounds, validate

from infermeter.errors import ConfigError
from infermeter.perfmodel import fit
from infermeter.perfmodel.calibrate import (
    Validation,
    calibrate_rows,
    load_results,
    predict_rows,
    stats,
)
from infermeter.perfmodel.published import PublishedRow
from infermeter.perfmodel.roofline import FloatArray

ONE_BOARD = 8


def _stack_effects(
    base: Callable[[str, str, str, str], tuple[str, ...]],
) -> Callable[[str, str, str, str], tuple[str, ...]]:
    def features(
        scenario: str, stack: str, benchmark: str, part: str
    ) -> tuple[str, ...]:
        out = base(scenario, stack, benchmark, part)
        if scenario == "Interactive":
            out += (f"scenstack:Interactive|{fit.effect_stack(part, stack)}",)
        return out

    return features


def _no_board_pools(
    base: Callable[..., FloatArray],
) -> Callable[..., FloatArray]:
    def grid(
        row: PublishedRow,
        speed: FloatArray | None = None,
        *,
        disaggregated: bool = True,
    ) -> FloatArray:
        return base(row, speed, disaggregated=disaggregated and row.count > ONE_BOARD)

    return grid


@contextmanager
def structure(name: str) -> Iterator[None]:
    """Apply ``name``'s change to ``fit`` for the duration (the shipped one: none)."""
    features, grid = fit.scenario_features, fit.physics_grid
    if name.startswith("stack effects"):
        fit.scenario_features = _stack_effects(features)
    if "no pools" in name:
        fit.physics_grid = _no_board_pools(grid)
    try:
        yield
    finally:
        fit.scenario_features, fit.physics_grid = features, grid


STRUCTURES = ("stack effects (before)", "shipped", "shipped, no pools on one board")


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


def later_round(path: str) -> str:
    both = load_results(["v4.1", "v5.1"])
    got = predict_rows(load_results([path]), calibrate_rows(both.rows, "both"))
    o = got.overall()
    inter = [p for p in got.predictions if p.row.scenario == "Interactive"]
    return (
        f" | {o.median * 100:4.1f} / {o.p90 * 100:4.1f}, "
        f"Interactive {stats('', inter).median * 100:4.1f}"
    )


def main(later: str | None) -> None:
    both, v41, v51 = load_rounds()
    if later:
        load_results([later])  # a bad path fails here, before any table
    print(header(f"{'structure':32s}", later=bool(later)))
    details = []
    for name in STRUCTURES:
        with structure(name):
            t0 = time.perf_counter()
            text, _, system = validate(both, v41, v51)
            if later:
                text += later_round(later)
            print(f"{name:31s} {text}   ({time.perf_counter() - t0:.0f} s)")
            details.append((name, interactive_by_system(system)))
    for name, text in details:
        print(
            f"\nheld-out Interactive rows, {name}: median signed error per system\n{text}"
        )
    print()
    constants(both.rows)  # re-measured on the shipped structure


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else None)
    except ConfigError as exc:  # ../shared absent, or the later round's file unreadable
        raise SystemExit(f"perfmodel_interactive: {exc}") from None
