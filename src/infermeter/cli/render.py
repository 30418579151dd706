"""Console rendering of a run: a progress bar while it runs, then the verdict and metrics."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from infermeter.runs.run import RunReport, RunRequest

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def print_run(
    request: RunRequest, execute: Callable[..., RunReport], *, json_output: bool
) -> RunReport:
    """Run ``request`` with a progress bar on stderr; print the result on stdout."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    with bar:
        task = bar.add_task(f"{request.benchmark} {request.scenario.value}", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        def on_phase(label: str) -> None:
            bar.update(
                task,
                description=f"{request.benchmark} {request.scenario.value} ({label})",
                completed=0,
            )

        report = execute(request, progress=progress, on_phase=on_phase)
    if json_output:
        console.print_json(json.dumps(report.document, default=str))
    else:
        render_report(report)
    return report


def render_report(report: RunReport) -> None:
    doc = report.document
    verdict = doc["verdict"]
    for note in report.notes:
        err.print(f"info: {note}", markup=False)
    for warning in report.warnings:
        err.print(f"warning: {warning}", markup=False)
    result = verdict["result"] or "no verdict (accuracy run)"
    style = "bold green" if verdict["valid"] else "bold red"
    console.print(
        f"[{style}]Result: {result}[/] — {doc['benchmark']} {doc['scenario']} "
        f"{doc['mode']} on {doc['sut']['name']} (infermeter result, unverified)"
    )
    for reason in verdict["reasons"]:
        console.print(f"  * {reason}", markup=False)
    if doc["metrics"]:
        console.print(_metrics_table(doc["metrics"]))
    if doc.get("accuracy"):
        _print_accuracy(doc["accuracy"])
    client = doc.get("client") or {}
    if client.get("client_bound"):
        reasons = "; ".join(client.get("reasons", []))
        advice = "; ".join(client.get("advice", []))
        err.print(
            f"warning: the client may be the bottleneck ({reasons}): {advice}",
            markup=False,
        )
    if doc["sut"]["kind"] == "sim" and doc["scenario"] == "Server":
        _print_sim_comparison(report)
    console.print(f"Run folder: {report.folder}", markup=False)


def _print_sim_comparison(report: RunReport) -> None:
    # A simulated run is placed beside the published rows of the system it simulates.
    from infermeter.results.console import comparison_table
    from infermeter.runs.sim_endpoint import sim_comparison

    comparison = sim_comparison(report.folder, report.document)
    console.print(f"This run: {comparison.run.label}.", markup=False)
    console.print(comparison_table(comparison))
    for line in comparison.footnotes + comparison.notes:
        console.print(line, markup=False)


def _metrics_table(metrics: dict[str, Any]) -> Table:
    table = Table(show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("samples/s", metrics.get("samples_per_second")),
        ("tokens/s", metrics.get("tokens_per_second")),
        ("queries issued", metrics.get("queries_issued")),
        ("samples failed", metrics.get("samples_failed")),
    ]
    for name, value in rows:
        if value is not None:
            table.add_row(
                name, f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"
            )
    for key, label in (
        ("latency_ns", "latency"),
        ("ttft_ns", "TTFT"),
        ("tpot_ns", "TPOT"),
    ):
        stats = metrics.get(key)
        if stats:
            table.add_row(
                f"{label} p50 / p99 (ms)",
                f"{stats['p50'] / 1e6:,.3f} / {stats['p99'] / 1e6:,.3f}",
            )
    return table


def _print_accuracy(accuracy: dict[str, Any]) -> None:
    if accuracy.get("error"):
        console.print(f"Accuracy: not scored: {accuracy['error']}", markup=False)
        return
    verdict = "PASS" if accuracy.get("passed") else "FAIL"
    console.print(f"Accuracy: {verdict} ({accuracy.get('samples')} samples)")
    for m in accuracy.get("metrics", []):
        target = f" target >= {m['lower']:.4f}" if m.get("lower") is not None else ""
        console.print(f"  {m['metric']}: {m['value']:.4f}{target}", markup=False)
