"""``infermeter compare``: a run beside published MLPerf rows, with its cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from infermeter.cli.main import app
from infermeter.cli.tables import print_table
from infermeter.results import console as view
from infermeter.results.service import compare_run
from infermeter.throughput import definition


@app.command("compare")
def compare_command(
    run_dir: Annotated[Path, typer.Argument(help="A run folder.")],
    published: Annotated[
        list[str] | None,
        typer.Option("--published", help="Only these result IDs (repeatable)."),
    ] = None,
    accelerator: Annotated[
        str | None, typer.Option(help="Only published rows of this accelerator.")
    ] = None,
    gpu: Annotated[
        str | None, typer.Option(help="The run's GPU, e.g. h100-sxm.")
    ] = None,
    gpus: Annotated[
        int | None, typer.Option(help="How many GPUs the run used.")
    ] = None,
    builtin: Annotated[
        bool, typer.Option(help="Use the built-in headline table, not the store.")
    ] = False,
    all_divisions: Annotated[bool, typer.Option(help="Include open division.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many rows.")] = 10,
    prices: Annotated[Path | None, typer.Option(help="Your price TOML.")] = None,
    currency: Annotated[str, typer.Option(help="Currency of the cost table.")] = "USD",
    provider: Annotated[
        str | None, typer.Option(help="Price of this provider.")
    ] = None,
    store: Annotated[Path | None, typer.Option(help="Store file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False,
) -> None:
    """Put a run beside published rows of the same benchmark and scenario.

    Published rows come from the store ('infermeter results import'), else from
    the built-in headline table. Per-accelerator, % and cost figures are
    derived; the run is an unverified infermeter result.

    Examples:

      infermeter compare runs/my_run --gpu h100-sxm --gpus 8

      infermeter compare runs/my_run --published v4.1-0043 --json
    """
    result = compare_run(
        run_dir,
        ids=published or (),
        accelerator=accelerator,
        gpu=gpu,
        gpus=gpus,
        store=store,
        builtin=builtin,
        include_open=all_divisions,
        limit=limit,
        prices=prices,
        currency=currency,
        provider=provider,
    )
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2, default=str))
        return
    out = Console(highlight=False)
    print_table(out, view.comparison_table(result.comparison), wrap=view.WRAP)
    run = result.comparison.run
    if run.unit != "ms":
        tokens = run.unit == "tokens/s"
        out.print(
            f"this run's {run.unit}: {definition(run.scenario, tokens=tokens)}",
            highlight=False,
            markup=False,
        )
    for line in result.comparison.footnotes + result.comparison.notes:
        out.print(line, highlight=False, markup=False)
    if result.cost:
        print_table(out, view.cost_table(result.cost), wrap=("value",))
