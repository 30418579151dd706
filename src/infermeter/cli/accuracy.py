"""``infermeter accuracy``: score a run's mlperf_log_accuracy.json against its dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from infermeter.cli.main import EXIT_INVALID, EXIT_OK, app
from infermeter.cli.tables import print_table
from infermeter.workloads.accuracy.images import ImageScoring
from infermeter.workloads.accuracy.run_folder import score_run_folder
from infermeter.workloads.accuracy.scorer import AccuracyReport

Opt = typer.Option


@app.command("accuracy")
def accuracy_command(
    run_dir: Annotated[Path, typer.Argument(help="Run folder or accuracy log file.")],
    benchmark: Annotated[
        str | None, Opt(help="Benchmark (default: run.json's).")
    ] = None,
    dataset: Annotated[
        Path | None, Opt(help="Dataset file (default: run.json's).")
    ] = None,
    dataset_format: Annotated[str | None, Opt(help="Dataset format.")] = None,
    allow_pickle: Annotated[
        bool,
        Opt(help="Trust a pickle --dataset: unpickling runs any code it holds."),
    ] = False,
    tokenizer: Annotated[
        Path | None, Opt(help="tokenizer.json to decode token ids.")
    ] = None,
    samples: Annotated[int | None, Opt(help="Synthetic dataset size.")] = None,
    level: Annotated[
        float | None,
        Opt(
            help="Accuracy level in percent, 99 or 99.9 (default: the benchmark's first)."
        ),
    ] = None,
    dtype: Annotated[
        str | None, Opt(help="Response dtype (default: benchmark's).")
    ] = None,
    response_format: Annotated[str, Opt(help="auto, tokens or text.")] = "auto",
    clip_model: Annotated[
        Path | None, Opt(help="Local CLIP directory for SDXL's CLIP score.")
    ] = None,
    fid_features: Annotated[
        Path | None, Opt(help="TorchScript feature extractor for SDXL's FID.")
    ] = None,
    fid_stats: Annotated[
        Path | None, Opt(help="Reference FID statistics (.npz with mu, sigma).")
    ] = None,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """Score a run's accuracy log: score, reference, target and PASS/FAIL per metric.

    Works on infermeter run folders and on logs written by the official LoadGen.
    Exit code 0 PASS, 3 FAIL. Examples:

      infermeter accuracy runs/20261126T031500Z_resnet50_Offline

      infermeter accuracy logs/ --benchmark llama2-70b --dataset open_orca.parquet \
          --tokenizer tokenizer.json --json
    """
    from infermeter.errors import ConfigError

    if samples is not None and samples < 1:  # 0 would read as "not given"
        raise ConfigError(f"--samples must be >= 1 (got {samples}).")
    if response_format not in ("auto", "tokens", "text"):
        raise ConfigError(
            f"Unknown --response-format {response_format!r}. Known: auto, tokens, text."
        )
    report = score_run_folder(
        run_dir,
        benchmark=benchmark,
        dataset=dataset,
        fmt=dataset_format,
        allow_pickle=allow_pickle,
        tokenizer=tokenizer,
        samples=samples,
        level=None if level is None else level / 100,
        dtype=dtype,
        response_format=response_format,  # type: ignore[arg-type]
        image_scoring=ImageScoring(clip_model, fid_features, fid_stats),
    )
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _render(report)
    raise typer.Exit(EXIT_OK if report.passed else EXIT_INVALID)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _render(report: AccuracyReport) -> None:
    verdict = "PASS" if report.passed else "FAIL"
    table = Table(
        title=f"{report.benchmark} accuracy at {report.level * 100:g}%: "
        f"{verdict} ({report.samples} samples; infermeter, unverified)"
    )
    for column in ("metric", "score", "reference", "target", "result"):
        table.add_column(column)
    for m in report.metrics:
        target = "-" if m.lower is None else f">= {_fmt(m.lower)}"
        if m.upper is not None:
            target += f", <= {_fmt(m.upper)}"
        result = "-" if m.passed is None else ("PASS" if m.passed else "FAIL")
        table.add_row(
            m.metric,
            _fmt(m.value),
            _fmt(m.reference),
            target,
            f"{result} {m.note}".strip(),
        )
    console = Console(width=120)
    print_table(console, table)
    if report.test06 is not None:
        t = report.test06
        state = "PASS" if t.passed else f"FAIL ({t.failed_count} of {t.checked})"
        console.print(f"TEST06-style response checks: {state}")
        for line in t.failures:
            console.print(f"  {line}", markup=False)
