"""Console rendering of a run: a progress bar while it runs, then the verdict and metrics."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from infermeter.cli.live_view import LiveBar, LiveView, behind_note
from infermeter.cli.live_view import progress_bar as live_bar
from infermeter.cli.tables import print_table
from infermeter.runs.request import RunRequest
from infermeter.runs.run import RunReport
from infermeter.throughput import definition, format_rate

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)
PROGRESS_EVERY_S = 10.0


class ProgressLines:
    """Plain progress lines with an ETA, for a stderr that is not a terminal."""

    def __init__(
        self,
        label: str,
        every_s: float = PROGRESS_EVERY_S,
        live: LiveView | None = None,
    ) -> None:
        self.label = label
        self.live = live  # says when completions fall behind issues
        self.every_s = every_s
        self._start = time.monotonic()
        self._next = self._start + every_s

    def phase(self, label: str) -> None:
        self.label = label
        self._start = time.monotonic()
        self._next = self._start + self.every_s

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.every_s
        line = self.line(done, total, now - self._start)
        if self.live is not None:
            self.live.line()
            if self.live.figures is not None:
                line += behind_note(self.live.figures)
        err.print(line, markup=False, soft_wrap=True)

    def line(self, done: int, total: int, elapsed: float) -> str:
        if done and total > done:
            eta = f"ETA {_clock(elapsed * (total - done) / done)}"
        else:
            eta = "ETA unknown" if not done else "finishing"
        pct = f" ({100 * done / total:.0f} %)" if total else ""
        return (
            f"{self.label}: {done:,} of {total:,} samples done{pct}, "
            f"{_clock(elapsed)} elapsed, {eta}"
        )


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def print_run(
    request: RunRequest,
    execute: Callable[..., RunReport],
    *,
    json_output: bool,
    quiet: bool = False,
) -> RunReport:
    """Run ``request`` with a progress bar on stderr; print the result on stdout.

    On a terminal the bar has the live figures under it (``live_view``); when
    stderr is not a terminal (a log file, CI), progress comes as a line with an
    ETA every 10 s instead. ``quiet``: neither.
    """
    label = f"{request.benchmark} {request.scenario.value}"

    def note(line: str) -> None:
        # One line per note in a log; wrapped at words on a terminal.
        err.print(line, markup=False, soft_wrap=not err.is_terminal)

    if quiet:
        report = execute(request, on_note=note)
    elif not err.is_terminal:
        lines = ProgressLines(label, live=LiveView(every_s=0))
        report = execute(
            request,
            progress=lines,
            on_phase=lambda phase: lines.phase(f"{label} ({phase})"),
            on_note=note,
            live=lines.live,
        )
    else:
        report = _with_bar(request, execute, note)
    _print(report, json_output)
    return report


def _with_bar(
    request: RunRequest,
    execute: Callable[..., RunReport],
    note: Callable[[str], None],
) -> RunReport:
    bar, live = progress_bar(), LiveView()
    with bar:
        task = bar.add_task(f"{request.benchmark} {request.scenario.value}", total=None)

        def progress(done: int, total: int) -> None:
            bar.live_line = live.line()
            bar.update(task, completed=done, total=total)

        def on_phase(label: str) -> None:
            bar.live_line = ""
            bar.update(
                task,
                description=f"{request.benchmark} {request.scenario.value} ({label})",
                completed=0,
            )

        return execute(
            request, progress=progress, on_phase=on_phase, on_note=note, live=live
        )


def progress_bar() -> LiveBar:
    """The TTY bar on stderr, the live figures under it (``live_view``)."""
    return live_bar(err)


def _print(report: RunReport, json_output: bool) -> None:
    if json_output:
        console.print_json(json.dumps(report.document, default=str))
    else:
        render_report(report)


def render_report(report: RunReport) -> None:
    doc = report.document
    verdict = doc["verdict"]
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
        print_table(console, _metrics_table(doc["metrics"], _streamed(doc)))
        tokens = "tokens_per_second" in doc["metrics"]
        console.print(
            f"{'tokens/s' if tokens else 'samples/s'}: "
            f"{definition(doc['scenario'], tokens=tokens)}",
            markup=False,
        )
    counts = doc.get("token_counts") or {}
    if counts.get("description"):
        console.print(str(counts["description"]), markup=False)
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
    from infermeter.results.console import WRAP, comparison_table
    from infermeter.runs.sim_endpoint import sim_comparison

    comparison = sim_comparison(report.folder, report.document)
    console.print(f"This run: {comparison.run.label}.", markup=False)
    print_table(console, comparison_table(comparison), wrap=WRAP)
    for line in comparison.footnotes + comparison.notes:
        console.print(line, markup=False)


def _streamed(doc: dict[str, Any]) -> bool:
    params = (doc.get("sut") or {}).get("params") or {}
    return str(params.get("stream", True)).lower() not in ("false", "0", "no", "off")


def _metrics_table(metrics: dict[str, Any], streamed: bool = True) -> Table:
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
                name, format_rate(value) if isinstance(value, float) else f"{value:,}"
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
        elif key != "latency_ns" and "tokens_per_second" in metrics and not streamed:
            table.add_row(f"{label} (ms)", "n/a (answers not streamed)")
    return table


def _print_accuracy(accuracy: dict[str, Any]) -> None:
    if accuracy.get("error"):
        console.print(f"Accuracy: not scored: {accuracy['error']}", markup=False)
        return
    verdict = "PASS" if accuracy.get("passed") else "FAIL"
    console.print(f"Accuracy: {verdict} ({accuracy.get('samples')} samples)")
    for m in accuracy.get("metrics", []):
        target = f" target >= {m['lower']:.4f}" if m.get("lower") is not None else ""
        if m.get("upper") is not None:
            target += f", <= {m['upper']:.4f}"
        value = "not computed" if m.get("value") is None else f"{m['value']:.4f}"
        note = m.get("note") or ""
        note = f" ({note})" if note and note != "informative" else ""
        console.print(f"  {m['metric']}: {value}{target}{note}", markup=False)
