"""``infermeter model calibrate|predict|specs``: the performance model's commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from infermeter.cli.main import app
from infermeter.cli.tables import print_table

Opt = typer.Option
model_app = typer.Typer(help="The performance model: calibration, prediction, specs.")
app.add_typer(model_app, name="model")

if TYPE_CHECKING:  # the model loads lazily to keep `infermeter --help` fast
    from infermeter.perfmodel.calibrate import Validation
    from infermeter.perfmodel.fit import Coefficients


def _pct(x: float) -> str:
    return "-" if x != x else f"{x * 100:.1f} %"


def _print_validation(v: Validation, *, rows: bool) -> None:
    out = Console(highlight=False)
    out.print(f"{v.name}\nfit: {v.fit_label}")
    out.print(
        f"coverage: {len(v.predictions)} of {v.total} rows placed "
        f"({_pct(v.coverage)}); predictions are derived, not MLPerf results"
    )
    for title, sets in (
        ("per kind (anchored on published rows, or modelled)", v.kinds()),
        ("per scenario", v.by(lambda r: r.scenario)),
        ("per benchmark and scenario", v.by(lambda r: f"{r.benchmark} {r.scenario}")),
        ("per accelerator", v.by(lambda r: r.accelerator)),
    ):
        table = Table("set", "rows", "median |err|", "p90 |err|", "bias", title=title)
        for s in [*sets, v.overall()]:
            table.add_row(
                s.label, str(s.rows), _pct(s.median), _pct(s.p90), _pct(s.bias)
            )
        print_table(out, table)
    _print_baseline(out, v)
    if rows:
        _print_rows(out, v)
    for skip in v.skipped:
        out.print(
            f"not modelled: {skip.result_id} {skip.benchmark} {skip.scenario} "
            f"({skip.accelerator}): {skip.reason}",
            markup=False,
        )
    for note in v.notes:
        out.print(f"note: {note}", markup=False)


def _print_baseline(out: Console, v: Validation) -> None:
    b = v.baseline()
    if not b.rows:
        out.print("naive baseline: no row has a previous round's number to copy")
        return
    out.print(
        f"against the naive baseline (the previous round's number for the same "
        f"system, else the same part and count), on the {b.rows} rows that have "
        f"one: median |err| predictor {_pct(b.predictor)}, naive {_pct(b.naive)}; "
        f"closer: predictor on {_pct(b.closer)} of them, naive on {_pct(b.naive_closer)}"
    )


def _print_rows(out: Console, v: Validation) -> None:
    table = Table(
        "Result ID",
        "System",
        "Benchmark",
        "Scenario",
        "Published",
        "Predicted",
        "err",
        "naive err",
        "Anchors (or modelled)",
        title="Per row (tokens/s)",
    )
    for p in v.predictions:
        r = p.row
        naive = p.naive_error
        table.add_row(
            r.result_id,
            f"{r.count}x {r.accelerator} {r.stack} {r.precision}",
            r.benchmark,
            r.scenario,
            f"{r.tokens_per_s:,.0f}",
            f"{p.predicted:,.0f}",
            f"{p.error:+.0%}",
            "-" if naive is None else f"{naive:+.0%}",
            p.named_anchors(),
        )
    print_table(out, table)


def _emit(v: Validation, *, as_json: bool, rows: bool) -> None:
    if as_json:
        typer.echo(json.dumps(v.as_dict(), indent=2))
    else:
        _print_validation(v, rows=rows)


@model_app.command("predict")
def predict_command(
    results: Annotated[
        list[str],
        Opt(
            help="summary_results.json (or a results repository's summary.json) "
            "to predict: a path, or a round (v5.1)."
        ),
    ],
    fit: Annotated[
        list[str] | None,
        Opt(
            help="Coefficients: a shipped fit (v4.1, v4.1+v5.1, ...), a coefficients "
            "JSON, or summary_results.json files (repeat --fit) to refit on; anchors "
            "come only from the rounds it read. Default: the shipped fit of every round."
        ),
    ] = None,
    rows: Annotated[bool, Opt(help="Print the per-row table.")] = False,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """Predict published rows from a fit; error per set (in-sample, and said so,
    where the fit read their round: --fit v4.1 predicts v5.1 from rows it never saw).

    Each row is anchored on the nearest published rows of its benchmark and
    scenario in the rounds the fit read, before its own (anchor x model ratio),
    or modelled where none exists; beside it the naive baseline (the previous
    round's number for the same system, else part and count). Coverage and error
    per kind, benchmark, scenario and accelerator; every row the model cannot
    place is listed with the reason. Predictions are derived figures, not MLPerf
    results. Examples:

      infermeter model predict --results ../shared/data/mlperf/summary_results_v5.1.json --fit v4.1

      infermeter model predict --results v5.1 --fit v4.1 --json

      infermeter model predict --results v6.1 --fit v4.1 --fit v5.1 --rows
    """
    from infermeter.perfmodel.calibrate import (
        DEFAULT_FIT,
        NotCoefficients,
        anchors_from,
        calibrate_rows,
        fit_rows,
        load_coefficients,
        load_results,
        predict_anchored,
    )

    target = load_results(_present(results))
    fits = fit or [DEFAULT_FIT]
    try:
        if len(fits) > 1:
            raise NotCoefficients("several files: published rows to refit on")
        coef = load_coefficients(fits[0])
        read = fit_rows(coef)
    except NotCoefficients:  # a coefficients file's own errors say what is wrong
        read = load_results(_present(fits))
        coef = calibrate_rows(read.rows, f"refitted on {' + '.join(read.rounds)}")
    name = f"predict {' + '.join(target.rounds)} from a fit {coef.label}"
    found = anchors_from(read, coef, target.rows)
    _emit(predict_anchored(target, coef, found, name), as_json=as_json, rows=rows)


@model_app.command("calibrate")
def calibrate_command(
    results: Annotated[
        list[str] | None,
        Opt(
            help="summary_results.json files (paths or rounds; default: v4.1 and v5.1 "
            "from ../shared)."
        ),
    ] = None,
    holdout: Annotated[
        str,
        Opt(
            help="'system': leave each accelerator x count x stack out; 'benchmark': "
            "each benchmark (a new one's error); 'none'."
        ),
    ] = "system",
    write: Annotated[
        Path | None,
        Opt(help="Write (merge) the fitted coefficients into this JSON file."),
    ] = None,
    rows: Annotated[bool, Opt(help="Print the per-row table.")] = False,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """Fit the model to published MLPerf LLM rows; held-out error (by system or benchmark).

    Without --results, reads the v4.1 and v5.1 files from ../shared. --write
    stores the fit (labelled with the rounds read) so that
    'model predict --fit FILE' uses it. Examples:

      infermeter model calibrate --results v4.1 --results v5.1
                      # (tests: --holdout none)

      infermeter model calibrate --holdout benchmark

      infermeter model calibrate --results v4.1 --holdout none --write fits.json
    """
    from infermeter.errors import ConfigError
    from infermeter.perfmodel.calibrate import (
        calibrate_rows,
        coefficients_to_dict,
        leave_one_benchmark_out,
        leave_one_system_out,
        load_results,
    )

    if holdout not in ("system", "benchmark", "none"):
        raise ConfigError(
            f"Unknown --holdout {holdout!r}. Known: system, benchmark, none."
        )
    data = load_results(_present(results or ["v4.1", "v5.1"]))
    coef = calibrate_rows(data.rows)
    if write is not None:
        _merge_write(write, coef, data.source)
    if holdout != "none":
        check = leave_one_system_out if holdout == "system" else leave_one_benchmark_out
        _emit(check(data), as_json=as_json, rows=rows)
    elif as_json:
        typer.echo(json.dumps(coefficients_to_dict(coef, [data.source]), indent=2))
    else:
        Console(highlight=False).print(
            f"{coef.label}: {coef.rows} rows, {len(coef.values)} effects"
        )


def _merge_write(path: Path, coef: Coefficients, source: str) -> None:
    from infermeter.errors import ConfigError
    from infermeter.outfile import replacing
    from infermeter.perfmodel.calibrate import coefficients_to_dict, fits_table

    data: dict[str, object] = {"fits": {}}
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(
                f"Cannot read {str(path)!r} to merge into: {exc}."
            ) from None
    if isinstance(data, dict):
        data.setdefault("fits", {})
    fits = fits_table(data, str(path))
    entry = coefficients_to_dict(
        coef, [Path(s.strip()).name for s in source.split(",")]
    )
    fits["+".join(entry["rounds"])] = entry
    data["note"] = (
        "Fitted coefficients of infermeter's performance model; regenerate with "
        "'infermeter model calibrate --results ROUND... --holdout none --write FILE'."
    )
    with replacing(path) as tmp:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


@model_app.command("specs")
def specs_command(
    kind: Annotated[
        str, Opt(help="accelerators, models or workloads.")
    ] = "accelerators",
    file: Annotated[Path | None, Opt(help="User TOML file overriding entries.")] = None,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """List accelerator, model or workload specs (each with its source and date).

    Workloads are the MLPerf benchmarks' token lengths (measured, or a documented
    assumption: isl_assumed) and latency bounds. Examples:

      infermeter model specs

      infermeter model specs --kind models --json

      infermeter model specs --kind workloads
    """
    records = _spec_records(kind, file)
    if as_json:
        typer.echo(json.dumps(records, indent=2))
        return
    cols = SPEC_COLUMNS[kind]
    table = Table(caption=SPEC_CAPTIONS[kind])
    for i, c in enumerate(cols):
        # Short headers keep the table within 80 columns; print_table keeps
        # every value whole.
        table.add_column(SPEC_HEADERS.get(c, c), justify="left" if i == 0 else "right")
    for rec in records:
        table.add_row(*(_spec_cell(c, rec) for c in cols))
    print_table(Console(highlight=False), table)


SPEC_COLUMNS = {
    "accelerators": [
        "key",
        "memory_gb",
        "bandwidth_tbs",
        "bf16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "tdp_w",
        "scaleup_domain",
    ],
    "models": ["key", "params_total", "params_active", "layers", "kv_heads", "experts"],
    "workloads": [
        "key",
        "isl_mean",
        "osl_mean",
        "osl_cv",
        "ttft_ms",
        "tpot_ms",
        "interactive_ttft_ms",
        "interactive_tpot_ms",
    ],
}
SPEC_HEADERS = {
    "memory_gb": "GB",
    "bandwidth_tbs": "TB/s",
    "bf16_tflops": "BF16 TF",
    "fp8_tflops": "FP8 TF",
    "fp4_tflops": "FP4 TF",
    "tdp_w": "TDP W",
    "scaleup_domain": "domain",
    "params_total": "params",
    "params_active": "active",
    "kv_heads": "KV heads",
    "isl_mean": "ISL",
    "osl_mean": "OSL",
    "osl_cv": "cv",
    "ttft_ms": "TTFT",
    "tpot_ms": "TPOT",
    "interactive_ttft_ms": "iTTFT",
    "interactive_tpot_ms": "iTPOT",
}
SPEC_CAPTIONS = {
    "accelerators": "Dense TFLOPS (*: what the part sustains within its power "
    "budget; the datasheet's peak in --json); domain: accelerators per scale-up "
    "domain. Sources and dates: --json",
    "models": "Parameters in billions. Sources and dates: --json",
    "workloads": "Mean tokens (* an assumed input length, not measured), the "
    "output's cv, p99 bounds in ms (i: Interactive). Sources and dates: --json",
}


def _spec_cell(column: str, record: dict[str, Any]) -> str:
    value = record[column]
    if value is None:
        return "-"
    if column.startswith("params_") and isinstance(value, int | float):
        return f"{value / 1e9:.1f}B"
    text = (
        str(int(value))
        if isinstance(value, float) and value.is_integer()
        else str(value)
    )
    if column == "isl_mean" and record.get("isl_assumed"):
        return f"{text}*"
    cap = dict(record.get("power_caps") or ()).get(column.split("_")[0])
    if cap is not None:  # the rate the part sustains within its power budget
        return f"{cap:.0f}*"
    return text


def _spec_records(kind: str, file: Path | None) -> list[dict[str, Any]]:
    from infermeter.errors import ConfigError
    from infermeter.perfmodel.specs import accelerators, models, workloads

    if kind == "workloads":
        if file is not None:
            raise ConfigError("--file overrides accelerators or models, not workloads.")
        return [dataclasses.asdict(v) for v in workloads().values()]
    if kind not in ("accelerators", "models"):
        raise ConfigError(
            f"Unknown --kind {kind!r}. Known: accelerators, models, workloads."
        )
    table_data = accelerators(file) if kind == "accelerators" else models(file)
    return [dataclasses.asdict(v) for v in table_data.values()]


def _present(sources: list[str]) -> list[str]:
    """``sources``, where a round name ("v5.1") names a file this machine has.

    A round is read from a checkout's shared data folder, which an installed
    infermeter has not: say where to get the file instead of naming a path
    the user never had.
    """
    from infermeter.errors import ConfigError
    from infermeter.perfmodel.published import round_file

    for source in sources:
        path = round_file(source)
        if str(path) != source and not path.is_file():
            tag = path.stem.removeprefix("summary_results_")
            raise ConfigError(
                f"No results of round {tag} on this machine (looked for {path.name} "
                "beside the checkout); download summary_results.json from "
                f"github.com/mlcommons/inference_results_{tag} and pass "
                "--results PATH"
            )
    return sources
