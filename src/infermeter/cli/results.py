"""``infermeter results``: the store of runs and imported published results."""

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
from infermeter.results.export import export_rows
from infermeter.results.published import load_summary_file, screen
from infermeter.results.request_export import export_requests, request_format
from infermeter.results.runfolder import load_run
from infermeter.results.store import Store

results_app = typer.Typer(
    no_args_is_help=True,
    help="The results store: indexed runs and imported published MLPerf results.\n\n"
    "Examples:\n\n  infermeter results add runs/20261126T031500Z_llama2-70b_Server\n\n"
    "  infermeter results import summary_results.json\n\n"
    "  infermeter results list --published --benchmark llama2-70b\n\n"
    "  infermeter results export runs.parquet",
)
app.add_typer(results_app, name="results")

StoreOpt = Annotated[
    Path | None, typer.Option("--store", help="Store file (default: user data dir).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
out = Console(highlight=False)  # the terminal's width: tables fit 80 columns


def _echo(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


@results_app.command("add")
def add_command(
    run_dir: Annotated[Path, typer.Argument(help="A run folder.")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index a run folder in the store ('infermeter run' does this itself).

    Examples:

      infermeter results add runs/20261126T031500Z_llama2-70b_Server
    """
    with Store(store) as db:
        row = db.index_run(run_dir)
    _echo(row) if as_json else out.print(f"indexed {row['run_id']} in {db.path}")


@results_app.command("import")
def import_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="An MLCommons summary_results.json, or a results repository's "
            "summary.json (inference_results_v6.1 and on)."
        ),
    ],
    retrieved: Annotated[
        str | None, typer.Option(help="Retrieval date (default: file date).")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import an MLCommons summary_results.json (any round); all rows or none.

    A results repository's summary.json (mlcommons/inference_results_v6.1 and on)
    reads too; it has no result IDs, so each row's system directory stands for one.

    Examples:

      infermeter results import summary_results.json --retrieved 2026-11-26
    """
    rows, skipped = screen(load_summary_file(file, retrieved_at=retrieved))
    if not rows:
        raise ConfigError(
            f"{str(file)!r}: no row to import ({len(skipped)} left out, e.g. "
            f"{skipped[0] if skipped else 'none'}); pass a summary with accelerator counts."
        )
    with Store(store) as db:
        count = db.add_published(rows, source=rows[0].source)
    rounds = sorted({r.round for r in rows})
    if as_json:
        _echo(
            {
                "imported": count,
                "rounds": rounds,
                "store": str(db.path),
                "skipped": skipped,
            }
        )
        return
    out.print(f"imported {count} published rows ({', '.join(rounds)}) into {db.path}")
    if skipped:
        out.print(f"left out {len(skipped)} rows:", markup=False)
        for line in skipped:
            out.print(f"  {line}", markup=False)


@results_app.command("list")
def list_command(
    published: Annotated[bool, typer.Option(help="List published rows.")] = False,
    benchmark: Annotated[str | None, typer.Option(help="Filter.")] = None,
    scenario: Annotated[str | None, typer.Option(help="Filter.")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List indexed runs, or published rows with --published.

    Examples:

      infermeter results list

      infermeter results list --published --benchmark llama2-70b --json
    """
    with Store(store) as db:
        if published:
            rows = db.published(benchmark=benchmark, scenario=scenario)
            if as_json:
                _echo([r.as_dict() for r in rows])
            else:
                print_table(out, view.published_table(rows))
            return
        runs = db.runs(benchmark=benchmark, scenario=scenario)
    if as_json:
        _echo(runs)
    else:
        print_table(out, view.runs_table(runs), wrap=view.RUN_WRAP)


@results_app.command("show")
def show_command(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix.")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one indexed run.

    Examples:

      infermeter results show 20261126T0315
    """
    with Store(store) as db:
        row = db.run(run_id)
    if as_json:
        _echo(row)
        return
    for key, value in row.items():
        out.print(f"[bold]{key}[/bold]: {value}", highlight=False)


@results_app.command("rm")
def rm_command(
    run_id: Annotated[str | None, typer.Argument(help="Run id to drop.")] = None,
    published_round: Annotated[
        str | None, typer.Option(help="Drop every published row of a round.")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Drop a run from the index (its folder stays), or a published round.

    Examples:

      infermeter results rm 20261126T031500Z_llama2-70b_Server

      infermeter results rm --published-round v4.1
    """
    removed: dict[str, object] = {}
    with Store(store) as db:
        if published_round:
            removed["published_rows"] = db.remove_published(published_round)
        if run_id:
            removed["run_id"] = db.remove_run(run_id)
    _echo(removed) if as_json else out.print(f"removed {removed}", highlight=False)


@results_app.command("export")
def export_command(
    target: Annotated[
        str,
        typer.Argument(
            help="Output file (.csv, .json, .parquet); with --requests, the run "
            "(its folder or id).",
            metavar="FILE|RUN",
        ),
    ],
    published: Annotated[bool, typer.Option(help="Export published rows.")] = False,
    requests: Annotated[
        bool,
        typer.Option(
            "--requests",
            help="Export RUN's samples, one row each: times, TTFT/TPOT/latency "
            "(ms), output tokens, status and failure reason.",
        ),
    ] = False,
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out", help="With --requests: the file (default RUN_ID-requests.FORMAT)."
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", help="csv|json|parquet; with --requests jsonl|csv|parquet"
        ),
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Export runs (or published rows), or one run's samples (--requests), as
    CSV, JSON(L) or Parquet (Parquet needs the [parquet] extra).

    Examples:

      infermeter results export runs.csv

      infermeter results export published.parquet --published

      infermeter results export runs/20261126T031500Z_llama2-70b_Server --requests

      infermeter results export runs/20261126T031500Z_llama2-70b_Server --requests --out r.csv
    """
    if requests:
        _export_requests(target, out_file, fmt, store, as_json)
        return
    if out_file is not None:
        raise ConfigError(
            "--out goes with --requests; the store's export is written to FILE."
        )
    file = Path(target)
    with Store(store) as db:
        rows = [r.as_dict() for r in db.published()] if published else db.runs()
    written = export_rows(rows, file, fmt)
    if as_json:
        _echo({"file": str(file), "rows": len(rows), "format": written})
    else:
        out.print(f"wrote {len(rows)} rows to {file} ({written})")


def _export_requests(
    run: str, out_file: Path | None, fmt: str | None, store: Path | None, as_json: bool
) -> None:
    chosen = request_format(out_file, fmt)  # a bad format before any file is read
    folder = Path(run)
    if not folder.is_dir():
        with Store(store) as db:
            folder = Path(db.run(run)["path"])
    loaded = load_run(folder)
    file = out_file or Path(f"{loaded.run_id}-requests.{chosen}")
    n = export_requests(loaded.records, file, chosen)
    if as_json:
        _echo({"file": str(file), "rows": n, "format": chosen})
    else:
        out.print(f"wrote {n} samples of {loaded.run_id} to {file} ({chosen})")
