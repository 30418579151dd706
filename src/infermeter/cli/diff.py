"""``infermeter diff``: is run B better, worse or no different from run A?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from infermeter.cli.main import app
from infermeter.cli.tables import print_table
from infermeter.results import console as view
from infermeter.results.diff import diff_runs
from infermeter.results.runfolder import load_run
from infermeter.throughput import definition


@app.command("diff")
def diff_command(
    run_a: Annotated[Path, typer.Argument(help="Baseline run folder (A).")],
    run_b: Annotated[Path, typer.Argument(help="Candidate run folder (B).")],
    confidence: Annotated[float, typer.Option(help="Interval level.")] = 0.95,
    threshold: Annotated[
        float, typer.Option(help="Smallest relative change that counts (0.02 = 2 %).")
    ] = 0.02,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option(min=0, help="Bootstrap seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False,
) -> None:
    """Compare throughput and latency percentiles of B against baseline A.

    Each metric gets a bootstrap confidence interval on the relative change
    B / A - 1, from records.npz. A metric is worse (or better) only when its
    whole interval lies beyond --threshold. Exit code: 0 no regression,
    4 worse (for CI gates), 1 error, 2 usage error.

    Examples:

      infermeter diff runs/baseline runs/candidate

      infermeter diff runs/a runs/b --threshold 0.05 --json || echo regression
    """
    a, b = load_run(run_a), load_run(run_b)
    result = diff_runs(
        a,
        b,
        resamples=resamples,
        confidence=confidence,
        threshold=threshold,
        seed=seed,
    )
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
    else:
        out = Console(width=160)
        print_table(out, view.diff_table(result))
        tokens = a.is_token_run
        out.print(
            f"throughput ({'tokens/s' if tokens else 'samples/s'}): the runs' own "
            f"figures; A {definition(a.scenario, tokens=tokens)}",
            highlight=False,
        )
        out.print(f"verdict: {result.verdict}", highlight=False)
    raise typer.Exit(result.exit_code)
