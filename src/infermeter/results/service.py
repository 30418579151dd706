"""One call per command: open what a command needs and return finished results."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infermeter.results.compare import (
    Comparison,
    RunFigure,
    check_part,
    compare,
    run_figure,
)
from infermeter.results.cost import (
    Cost,
    compute_cost,
    load_prices,
    measured_concurrency,
)
from infermeter.results.energy import run_tokens_per_joule
from infermeter.results.headline import headline_results
from infermeter.results.published import PublishedResult
from infermeter.results.runfolder import load_run
from infermeter.results.store import Store


def published_rows(
    benchmark: str, scenario: str, *, store: Path | None, builtin: bool
) -> list[PublishedResult]:
    """Imported rows of the store; the built-in table when none (or when asked)."""
    if not builtin:
        with Store(store) as db:
            rows = db.published(
                benchmark=benchmark.removesuffix("-99.9").removesuffix("-99"),
                scenario=scenario,
            )
        if rows:
            return rows
    return headline_results()


@dataclass(frozen=True)
class CompareResult:
    comparison: Comparison
    cost: Cost | None
    per_joule: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.comparison.as_dict(),
            "cost": self.cost.as_dict() if self.cost else None,
            # Derived: throughput / mean sampled power (run.json "power").
            "run_per_joule": self.per_joule,
        }


def _compare_same_part(
    figure: RunFigure,
    rows: Sequence[PublishedResult],
    *,
    ids: Sequence[str],
    accelerator: str | None,
    include_open: bool,
    limit: int,
) -> Comparison:
    """Without --accelerator, rows of the run's own part (--gpu, or run.json's GPU)
    when there are any; else every part, with a note saying so."""

    def run(part: str | None) -> Comparison:
        return compare(
            figure,
            rows,
            ids=ids,
            accelerator=part,
            include_open=include_open,
            limit=limit,
        )

    if accelerator or ids or not figure.accelerator:
        return run(accelerator)
    same = run(figure.accelerator)
    if same.rows:
        return same
    every = run(None)
    note = (
        f"No published rows of {figure.accelerator}; showing other "
        "accelerators (pick one with --accelerator)."
    )
    return dataclasses.replace(every, notes=[note, *every.notes])


def compare_run(
    run_dir: Path,
    *,
    ids: Sequence[str] = (),
    accelerator: str | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    store: Path | None = None,
    builtin: bool = False,
    include_open: bool = False,
    limit: int = 10,
    prices: Path | None = None,
    currency: str = "USD",
    provider: str | None = None,
) -> CompareResult:
    """The run beside published rows, plus its cost when the GPU is known."""
    run = load_run(run_dir)
    # Read before the comparison: a bad --prices or --currency is an error even
    # where the run's GPU is unknown and no cost is computed (it was ignored).
    table = load_prices(prices)
    table.rate(currency)
    figure = run_figure(run, gpu=gpu, gpus=gpus)
    rows = published_rows(run.benchmark, run.scenario, store=store, builtin=builtin)
    if accelerator:
        check_part(accelerator, rows)
    comparison = _compare_same_part(
        figure,
        rows,
        ids=ids,
        accelerator=accelerator,
        include_open=include_open,
        limit=limit,
    )
    cost = None
    if figure.accelerator and figure.unit != "ms":
        cost = compute_cost(
            table,
            gpu=gpu or figure.accelerator,
            gpus=figure.accelerators or 1,
            throughput_per_s=figure.value,
            unit="tokens" if figure.unit == "tokens/s" else "samples",
            concurrency=measured_concurrency(run.metrics),
            currency=currency,
            provider=provider,
        )
    return CompareResult(comparison, cost, run_tokens_per_joule(run.meta))
