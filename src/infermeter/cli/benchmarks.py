"""``infermeter benchmarks``: list the known benchmarks and show one's rules."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from infermeter.cli.main import app
from infermeter.workloads import (
    Benchmark,
    get_benchmark,
    list_benchmarks,
    load_benchmarks_file,
)

benchmarks_app = typer.Typer(
    invoke_without_command=True,
    help="List the MLPerf benchmarks infermeter knows, or show one's rules.\n\n"
    "Examples:\n\n  infermeter benchmarks\n\n"
    "  infermeter benchmarks show llama2-70b\n\n"
    "  infermeter benchmarks --file my_benchmarks.toml --json",
)
app.add_typer(benchmarks_app, name="benchmarks")

FileOpt = Annotated[
    Path | None,
    typer.Option("--file", help="Also load custom benchmarks from this TOML."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:g} ms"


_SHORT = {
    "SingleStream": "SS",
    "MultiStream": "MS",
    "Server": "Server",
    "Offline": "Offline",
    "Interactive": "Interactive",
}


def _scenario_list(scenarios: tuple[str, ...]) -> str:
    return ", ".join(_SHORT.get(s, s) for s in scenarios) or "-"


def _conf_names(b: Benchmark) -> list[str]:
    names = list(b.conf_models)
    if b.interactive_conf_model:
        names.append(b.interactive_conf_model)
    return names


def _server_bound(b: Benchmark) -> str:
    """The Server scenario's constraint: TTFT/TPOT, an end-to-end latency, or none."""
    if "Server" not in b.scenarios:
        return "-"
    if b.ttft_ms is not None:
        return f"TTFT {_ms(b.ttft_ms)} / TPOT {_ms(b.tpot_ms)}"
    return _ms(b.server_target_latency_ms)


@benchmarks_app.callback()
def list_command(
    ctx: typer.Context, file: FileOpt = None, as_json: JsonOpt = False
) -> None:
    """List the benchmarks with their scenarios and latency limits."""
    if file is not None:
        load_benchmarks_file(file)
    if ctx.invoked_subcommand is not None:
        return
    benches = list_benchmarks()
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(b) for b in benches], indent=2))
        return
    table = Table(
        title="Benchmarks (MLPerf Inference rules; infermeter results are unverified)"
    )
    table.add_column("name", no_wrap=True)
    table.add_column("conf model(s)", no_wrap=True)  # every conf model, never cut
    for column in ("task", "datacenter", "edge", "runs", "Server bound", "accuracy"):
        table.add_column(column)
    for b in benches:
        table.add_row(
            b.name + (" (retired)" if b.retired else ""),
            "\n".join(_conf_names(b)),
            b.task,
            _scenario_list(b.datacenter_scenarios),
            _scenario_list(b.edge_scenarios),
            _scenario_list(b.scenarios),
            _server_bound(b),
            ", ".join(t.metric for t in b.accuracy),
        )
    Console(width=200).print(table)


@benchmarks_app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="Benchmark name, alias or conf model.")],
    as_json: JsonOpt = False,
) -> None:
    """Print one benchmark's rules: constraints, sample counts and accuracy targets.

    Examples:

      infermeter benchmarks show llama2-70b

      infermeter benchmarks show llama3_1-8b-interactive --json
    """
    bench = get_benchmark(name)
    if as_json:
        typer.echo(json.dumps(dataclasses.asdict(bench), indent=2))
        return
    Console(width=120).print(_rules_table(bench))


def _rules_table(b: Benchmark) -> Table:
    table = Table(title=f"{b.name} ({b.task})", show_header=False)
    rows: list[tuple[str, str]] = [
        ("conf model(s)", ", ".join(_conf_names(b))),
        ("dataset", f"{b.dataset} [format: {b.dataset_format}]"),
        ("dataset samples", _count(b.dataset_samples, b.accuracy_samples)),
        ("rules", f"{b.rules_round or '-'}" + (" (retired)" if b.retired else "")),
        ("datacenter scenarios", _scenario_list(b.datacenter_scenarios)),
        ("edge scenarios", _scenario_list(b.edge_scenarios)),
        ("infermeter runs", ", ".join(b.scenarios)),
        ("performance sample count", str(b.performance_sample_count)),
        ("Server target latency", _ms(b.server_target_latency_ms)),
        ("MultiStream latency hint", _ms(b.multistream_target_latency_ms)),
        ("TTFT / TPOT (Server, p99)", f"{_ms(b.ttft_ms)} / {_ms(b.tpot_ms)}"),
        (
            "TTFT / TPOT (Interactive)",
            f"{_ms(b.interactive_ttft_ms)} / {_ms(b.interactive_tpot_ms)}",
        ),
        ("Offline min query count", str(b.offline_min_query_count or "-")),
        ("equal issue", "yes" if b.equal_issue else "no"),
        ("token latencies", _token_mode(b)),
    ]
    for target in b.accuracy:
        bounds = []
        for level in b.accuracy_levels:
            lower, upper = target.bounds(level)
            low = "-" if lower is None else f"{lower:.4f}"
            high = "" if upper is None else f" .. {upper:.4f}"
            bounds.append(f"{level * 100:g}%: >= {low}{high}")
        ref = "-" if target.reference is None else f"{target.reference:g}"
        source = f" [{target.source}]" if target.source else ""
        rows.append(
            (
                f"accuracy {target.metric}",
                f"reference {ref}; " + "; ".join(bounds) + source,
            )
        )
    if b.notes:
        rows.append(("notes", b.notes))
    rows += [("source", line) for line in b.sources]
    for key, value in rows:
        table.add_row(key, value)
    return table


def _count(samples: int | None, accuracy: int | None) -> str:
    text = "-" if samples is None else str(samples)
    return text if accuracy is None else f"{text} ({accuracy} for accuracy)"


def _token_mode(b: Benchmark) -> str:
    if b.use_token_latencies:
        return "measured (use_token_latencies)"
    if b.infer_token_latencies:
        return f"inferred (x{b.token_latency_scaling_factor})"
    return "no"
