"""``infermeter report``: one self-contained HTML file for one or more runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from infermeter.cli.main import app
from infermeter.results.compare import run_figure
from infermeter.results.runfolder import RunFolder, load_run
from infermeter.results.service import compare_run


def _extras(run: RunFolder, **options: Any) -> dict[str, Any]:
    from infermeter.report.prediction import prediction_for

    result = compare_run(run.path, **options)
    cost = result.cost.as_dict() if result.cost else None
    comparison = result.comparison.as_dict()
    # The performance model's figure for the run's system, with its kind and
    # anchors (derived; None where the model has nothing to say).
    prediction = prediction_for(comparison["run"])
    return {"comparison": comparison, "cost": cost, "prediction": prediction}


@app.command("report")
def report_command(
    paths: Annotated[list[Path], typer.Argument(help="Run folders or sweep folders.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="HTML file to write.")
    ] = None,
    gpu: Annotated[str | None, typer.Option(help="The runs' GPU, for cost.")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs per run, for cost.")] = None,
    compare: Annotated[
        bool | None,
        typer.Option(
            help="Add published rows and cost. Default: for runs whose accelerators "
            "are known (a sim run, --gpu, a local model's GPUs)."
        ),
    ] = None,
    prices: Annotated[Path | None, typer.Option(help="Your price TOML.")] = None,
    store: Annotated[Path | None, typer.Option(help="Store file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False,
) -> None:
    """Write an HTML report that opens offline (plotly.js is embedded).

    Verdict and reasons, latency CDF and histogram, TTFT/TPOT, throughput and
    requests in flight over time, issue lateness, published rows, cost; a
    Pareto curve for each sweep folder (sub-folders with run.json or
    result_summary.json). Fixed-concurrency sweeps ('endpoints run', 'sweep
    --concurrency', a packaged results/<system>/<model>; top level above 32)
    are drawn together as
    MLPerf Endpoints curves: step functions overlaid, regions shaded, TTFT p90
    per point, and per region each curve's height and area against the first.
    Default output: report.html in the first run folder.

    Examples:

      infermeter report runs/my_run

      infermeter report runs/a runs/b sweeps/llama -o report.html --gpu h100-sxm --gpus 8

      infermeter report curve/ -o curve.html
    """
    # Imported here: ``infermeter --help`` loads no report code.
    from infermeter.report.html import build_report, write_report
    from infermeter.report.sweep import is_sweep
    from infermeter.runs.endpoints_curve import curve_folders, report_view

    # Fixed-concurrency sweeps are curves: one chart overlays them all as MLPerf
    # Endpoints publishes a curve; the other sweeps keep their Pareto chart each.
    # Every sweep has its own section (its points by load, its table).
    sweeps = [p for p in paths if is_sweep(p)]
    curves, not_curves = curve_folders(sweeps)
    runs = [load_run(p) for p in paths if not is_sweep(p)]
    options = {"gpu": gpu, "gpus": gpus, "prices": prices, "store": store}
    extras = {
        r.run_id: _extras(r, **options)
        for r in runs
        if compare
        or (compare is None and run_figure(r, gpu=gpu, gpus=gpus).accelerator)
    }
    target = output or (runs[0].path if runs else paths[0]) / "report.html"
    view = report_view(curves) if curves else None
    in_curves = [p for p in sweeps if p not in not_curves]
    page = build_report(
        runs, sweeps=sweeps, extras=extras, curves=view, in_curves=in_curves
    )
    write_report(page, target)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "report": str(target),
                    "runs": [r.run_id for r in runs],
                    "sweeps": [str(s) for s in not_curves],
                    "curves": [c.label for c in curves],
                }
            )
        )
    else:
        Console().print(f"wrote {target}", highlight=False)
