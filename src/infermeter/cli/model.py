"""``infermeter model calibrate|specs|simulate``: the performance model's commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from infermeter.cli.main import app

Opt = typer.Option
model_app = typer.Typer(help="The performance model: calibration, specs, simulation.")
app.add_typer(model_app, name="model")


@model_app.command("calibrate")
def calibrate_command(
    results: Annotated[
        Path | None, Opt(help="summary_results.json (default: ../shared v4.1 file).")
    ] = None,
    holdout: Annotated[str, Opt(help="Leave out one 'row' or one 'system'.")] = "row",
    rows: Annotated[bool, Opt(help="Print the per-row table.")] = True,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """Fit the roofline to published MLPerf LLM rows; report leave-one-out error.

    Falls back to a built-in table of v4.1 headline rows when the file is absent.
    Predictions are derived figures, not MLPerf results. Examples:

      infermeter model calibrate

      infermeter model calibrate --holdout system --no-rows --json
    """
    from infermeter.perfmodel.calibrate import default_report

    rep = default_report(results.resolve() if results else None, holdout)
    summary = {
        "source": rep.source,
        "holdout": holdout,
        "rows": len(rep.rows),
        "loo_median_abs_error": rep.median_error("loo"),
        "loo_offline": rep.median_error("loo", "Offline"),
        "loo_server": rep.median_error("loo", "Server"),
        "uncalibrated_median_abs_error": rep.median_error("uncalibrated"),
    }
    if as_json:
        per_row = [
            {
                "result_id": r.row.result_id,
                "accelerator": r.row.accelerator,
                "count": r.row.count,
                "benchmark": r.row.benchmark,
                "scenario": r.row.scenario,
                "published_tokens_s": r.row.tokens_per_s,
                "uncalibrated": r.uncalibrated,
                "loo": r.loo,
            }
            for r in rep.rows
        ]
        typer.echo(json.dumps({**summary, "per_row": per_row}, indent=2))
        return
    out = Console(highlight=False)
    if rows:
        table = Table(
            "Result ID",
            "System",
            "Benchmark",
            "Scenario",
            "Published tok/s",
            "Roofline",
            "err",
            "LOO",
            "err",
            title="Published (MLPerf v4.1) vs model (derived)",
        )
        for r in rep.rows:
            p = r.row.tokens_per_s
            table.add_row(
                r.row.result_id,
                f"{r.row.count}x {r.row.accelerator} {r.row.precision}",
                r.row.benchmark,
                r.row.scenario,
                f"{p:,.0f}",
                f"{r.uncalibrated:,.0f}",
                f"{r.uncalibrated / p - 1:+.0%}",
                f"{r.loo:,.0f}",
                f"{r.loo / p - 1:+.0%}",
            )
        out.print(table)
    out.print(f"source: {rep.source}; {len(rep.rows)} rows")
    out.print(
        f"median abs error: leave-one-out {summary['loo_median_abs_error']:.1%} "
        f"(Offline {summary['loo_offline']:.1%}, Server {summary['loo_server']:.1%}); "
        f"uncalibrated roofline {summary['uncalibrated_median_abs_error']:.1%}"
    )


@model_app.command("specs")
def specs_command(
    kind: Annotated[str, Opt(help="accelerators or models.")] = "accelerators",
    file: Annotated[Path | None, Opt(help="User TOML file overriding entries.")] = None,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """List accelerator or model specs (each with its source and date).

    Examples:

      infermeter model specs

      infermeter model specs --kind models --json
    """
    from infermeter.errors import ConfigError
    from infermeter.perfmodel.specs import accelerators, models

    if kind not in ("accelerators", "models"):
        raise ConfigError(f"Unknown --kind {kind!r}. Known: accelerators, models.")
    table_data = accelerators(file) if kind == "accelerators" else models(file)
    records = [dataclasses.asdict(v) for v in table_data.values()]
    if as_json:
        typer.echo(json.dumps(records, indent=2))
        return
    cols = (
        [
            "key",
            "memory_gb",
            "bandwidth_tbs",
            "bf16_tflops",
            "fp8_tflops",
            "fp4_tflops",
            "tdp_w",
        ]
        if kind == "accelerators"
        else ["key", "params_total", "params_active", "layers", "kv_heads", "experts"]
    )
    table = Table(caption="Sources and dates: --json")
    for c in cols:
        table.add_column(c, no_wrap=c == "key")
    for rec in records:
        table.add_row(*("-" if rec[c] is None else str(rec[c]) for c in cols))
    Console(highlight=False).print(table)
