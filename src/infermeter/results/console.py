"""Rich tables for the results commands (store listings, compare, cost)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from infermeter.formatting import format_number
from infermeter.results.compare import Comparison, system_name
from infermeter.results.cost import Cost
from infermeter.results.diff import DiffResult
from infermeter.results.published import PublishedResult
from infermeter.throughput import format_rate


def _num(value: float | None, digits: int = 1) -> str:
    return format_number(value, digits)


# Headers wrap at spaces and benchmark, scenario and SUT share a column (it
# wraps too, print_table(wrap=RUN_WRAP)): the table fits 80 columns.
RUN_COLUMNS = (
    "run id",
    "benchmark scenario SUT",
    "verdict",
    "tok/s",
    "samples/s",
    "latency\np99 ms",
)
RUN_WRAP = ("benchmark scenario SUT",)


def runs_table(rows: Sequence[dict[str, Any]]) -> Table:
    table = Table(
        title="Indexed runs (infermeter results, unverified)",
        caption="run id: its start time (UTC), a prefix of the whole id "
        "(results show PREFIX; --json lists whole ids)",
    )
    for column in RUN_COLUMNS:
        # The shared column at its longest word (rich would keep it a line wide).
        narrow = 12 if column in RUN_WRAP else None
        table.add_column(column, overflow="fold", max_width=narrow)
    for r in rows:
        p99 = r.get("latency_p99_ns")
        table.add_row(
            short_run_id(r),
            f"{r['benchmark']} {r['scenario']} {r.get('sut') or '-'}",
            str(r.get("verdict") or "-"),
            _num(r.get("tokens_per_second")),
            _num(r.get("samples_per_second"), 2),
            _num(p99 / 1e6 if p99 is not None else None, 2),
        )
    return table


def short_run_id(row: dict[str, Any]) -> str:
    """A run's id as a table shows it: the start time alone (``Z`` dropped)
    when the rest is the benchmark and scenario beside it; the time is a prefix
    of the id, so ``results show TIME`` finds it. Any other id whole."""
    run_id = str(row["run_id"])
    time, _, rest = run_id.partition("_")
    named = f"{row.get('benchmark')}_{row.get('scenario')}"
    if len(time) == 16 and time.endswith("Z") and rest.startswith(named):
        return time[:-1]
    return run_id


def published_table(rows: Sequence[PublishedResult]) -> Table:
    table = Table(title="Published MLPerf results (per accelerator = derived)")
    for column in (
        "result ID",
        "round",
        "division",
        "submitter",
        "benchmark",
        "scenario",
        "accelerator",
        "#",
        "value",
        "unit",
        "per acc.",
        "flags",
    ):
        table.add_column(column, overflow="fold")
    for r in rows:
        flags = "; ".join(
            f
            for f in (
                "preview" if r.preview else "",
                "duplicate" if r.duplicate else "",
                r.flags,
            )
            if f
        )
        table.add_row(
            r.result_id,
            r.round,
            r.division,
            r.submitter,
            r.benchmark,
            r.scenario,
            r.accelerator
            + (f" ({r.accelerator_variant})" if r.accelerator_variant else ""),
            str(r.total_accelerators),
            _num(r.value),
            r.unit,
            _num(r.per_accelerator),
            flags,
        )
    return table


# Columns of names, not figures: they may wrap at 80 columns.
WRAP = ("", "system", "accelerators")


def comparison_table(comparison: Comparison) -> Table:
    """The run beside published rows, narrow enough for 80 columns: the run's id
    and label are said in the notes, a row's -99/-99.9 suffix beside its ID, and
    the per-accelerator columns only where a row's size differs from the run's."""
    run = comparison.run
    table = Table(title=f"{run.benchmark} {run.scenario}: run vs published")
    sizes = {row.published.total_accelerators for row in comparison.rows}
    per_acc = bool(sizes - {run.accelerators}) or not run.accelerators
    columns = ["", "system", "accelerators", run.unit]
    columns += (
        ["per acc. (derived)", "% of published (derived)", "% per acc. (derived)"]
        if per_acc
        else ["% of published (derived)"]
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    acc = (
        f"{run.accelerators or '?'}x {run.accelerator}"
        if run.accelerator
        else "not known (--gpu, --gpus)"
    )
    mine = [format_rate(run.value)]
    mine += [_num(run.per_accelerator), "100 % (self)", "-"] if per_acc else ["100 %"]
    table.add_row("this run", "", acc, *mine, style="bold")
    for row in comparison.rows:
        p = row.published
        suffix = p.benchmark.removeprefix(p.base_benchmark)
        figures = [_num(p.value)]
        pct = f"{row.pct_of_published:.1f} %"
        if per_acc:
            each = row.pct_per_accelerator
            figures += [
                _num(p.per_accelerator),
                pct,
                "-" if each is None else f"{each:.1f} %",
            ]
        else:
            figures.append(pct)
        table.add_row(
            f"[{row.footnote}] {p.result_id}{f' ({suffix})' if suffix else ''}",
            system_name(p),
            f"{p.total_accelerators}x {p.accelerator}"
            + (f" ({p.accelerator_variant})" if p.accelerator_variant else ""),
            *figures,
        )
    return table


def cost_table(cost: Cost) -> Table:
    unit = cost.unit
    table = Table(title=f"Cost (derived, not an MLPerf metric; {cost.currency})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    offer = cost.offer
    rows = [
        ("price per GPU-hour", format_number(cost.per_gpu_hour, 3)),
        (
            f"system per hour ({cost.gpus}x {offer.gpu})",
            format_number(cost.system_per_hour, 2),
        ),
        (f"per million {unit}", format_number(cost.per_million, 4)),
        (f"{unit} per {cost.currency}", format_number(cost.units_per_currency, 0)),
        (
            "per user-hour",
            "-"
            if cost.per_user_hour is None
            else f"{format_number(cost.per_user_hour, 4)} at concurrency "
            f"{format_number(cost.concurrency, 1)}",
        ),
        (
            "price",
            f"{offer.provider} {offer.price_type}, {offer.retrieved_at}: "
            f"{offer.source}",
        ),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def diff_table(result: DiffResult) -> Table:
    pct = round(result.confidence * 100)
    table = Table(
        title=f"B = {result.run_b} vs A = {result.run_a} "
        f"(bootstrap {pct} % intervals, threshold {result.threshold:.0%})"
    )
    for column in ("metric", "A", "B", "change", f"{pct} % interval", "verdict"):
        table.add_column(column)
    styles = {"worse": "red", "better": "green"}
    for m in result.metrics:
        table.add_row(
            f"{m.name} ({m.unit})",
            format_rate(m.a),
            format_rate(m.b),
            f"{m.change:+.1%}",
            f"[{m.low:+.1%}, {m.high:+.1%}]",
            m.verdict,
            style=styles.get(m.verdict),
        )
    return table
