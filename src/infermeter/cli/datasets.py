"""``infermeter datasets``: dataset files (convert a pickle once, then use plain data)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from infermeter.cli.main import app

datasets_app = typer.Typer(
    no_args_is_help=True,
    help="Dataset files: convert MLPerf's pickles to Parquet or JSONL.\n\n"
    "Examples:\n\n"
    "  infermeter datasets convert open_orca.pkl open_orca.parquet --allow-pickle",
)
app.add_typer(datasets_app, name="datasets")


@datasets_app.command("convert")
def convert_command(
    source: Annotated[
        Path, typer.Argument(help="A .pkl, .csv, .parquet or .jsonl table.")
    ],
    target: Annotated[
        Path, typer.Argument(help="The .parquet or .jsonl file to write.")
    ],
    allow_pickle: Annotated[
        bool,
        typer.Option(
            help="Trust this pickle: unpickling runs any code the file holds."
        ),
    ] = False,
) -> None:
    """Convert a dataset table to Parquet or JSONL (plain data: nothing in it runs).

    MLPerf's reference LLM datasets are pandas pickles; loading a pickle runs
    whatever code it holds, so infermeter reads one only with --allow-pickle.
    Convert it once, then pass the Parquet or JSONL file to --dataset. Needs
    pip install 'infermeter[datasets]' (and '[parquet]' for Parquet).

    Examples:

      infermeter datasets convert open_orca.pkl open_orca.parquet --allow-pickle

      infermeter datasets convert open_orca.pkl open_orca.jsonl --allow-pickle
    """
    from infermeter.workloads.datasets.convert import convert_table

    done = convert_table(source, target, allow_pickle=allow_pickle)
    Console(highlight=False).print(
        f"wrote {done.path}: {done.rows:,} rows, columns {', '.join(done.columns)}",
        markup=False,
    )
