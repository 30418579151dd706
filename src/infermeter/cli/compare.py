"""``infermeter compare``: a run beside published MLPerf rows, with its cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from infermeter.cli.main import app
from infermeter.cli.tables import print_table
from infermeter.errors import ConfigError
from infermeter.results import console as view
from infermeter.results.service import compare_run
from infermeter.throughput import definition


@app.command("compare")
def compare_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="A run folder, or two or more curve folders ('endpoints run' / "
            "'sweep --concurrency' folders, packaged results/<system>/<model>)."
        ),
    ],
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
    out: Annotated[
        Path | None,
        typer.Option(help="Curves: also write their chart as an HTML page."),
    ] = None,
) -> None:
    """Put a run beside published rows of the same benchmark and scenario, or
    curves beside each other.

    Published rows come from the store ('infermeter results import'), else from
    the built-in headline table. Per-accelerator, % and cost figures are
    derived; the run is an unverified infermeter result.

    Two or more MLPerf Endpoints curves (fixed-concurrency point folders) give,
    per region of interest of the first, each curve's height (most tokens/s)
    and area under its step function against the first curve's (as
    'infermeter endpoints curve'); --out draws them overlaid.

    Examples:

      infermeter compare runs/my_run --gpu h100-sxm --gpus 8

      infermeter compare runs/my_run --published v4.1-0043 --json

      infermeter compare curve/ \\
          submission/my_org/submission_1/results/my_system/llama3_1-8b
    """
    if len(paths) > 1:
        _compare_curves(paths, out=out, as_json=as_json)
        return
    if out is not None:
        raise ConfigError("--out draws curves: give two or more curve folders.")
    [run_dir] = paths
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
    console = Console(highlight=False)
    print_table(console, view.comparison_table(result.comparison), wrap=view.WRAP)
    run = result.comparison.run
    if run.unit != "ms":
        tokens = run.unit == "tokens/s"
        console.print(
            f"this run's {run.unit}: {definition(run.scenario, tokens=tokens)}",
            highlight=False,
            markup=False,
        )
    for line in result.comparison.footnotes + result.comparison.notes:
        console.print(line, highlight=False, markup=False)
    if result.cost:
        print_table(console, view.cost_table(result.cost), wrap=("value",))


def _compare_curves(paths: list[Path], *, out: Path | None, as_json: bool) -> None:
    from infermeter.cli.curves import show_curves
    from infermeter.runs.endpoints_curve import curve_folders

    curves, others = curve_folders(paths)
    if others:
        raise ConfigError(
            f"{others[0]} is not a curve (fixed-concurrency points with output tokens "
            "and TPOT p90, the top level above 32); compare takes one run folder, "
            "or curve folders."
        )
    show_curves(curves, out=out, as_json=as_json)
