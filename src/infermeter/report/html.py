"""The self-contained HTML report: jinja2 template, plotly.js embedded inline.

Every string from a run (SUT names, error reasons, model responses) goes
through jinja2 autoescaping; chart data is JSON with ``<``, ``>`` and ``&``
escaped, so nothing in a run can close a script element.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from infermeter.errors import MissingDependencyError, StoreError
from infermeter.formatting import format_figure, format_number
from infermeter.outfile import replacing
from infermeter.report import charts, endpoints_chart, server_charts
from infermeter.report.headline import headline, latency_bounds_ms, sut_name
from infermeter.report.model import RunLike
from infermeter.report.sweep_charts import sweep_section
from infermeter.throughput import definition, format_rate

if TYPE_CHECKING:
    import jinja2

UNVERIFIED = "infermeter result (unverified): not verified by MLCommons Association"
MAX_RESPONSES = 5
MAX_RESPONSE_CHARS = 600


@cache
def _environment() -> jinja2.Environment:
    # Imported here: report rendering is the [report] extra, not the core.
    try:
        import jinja2
    except ImportError:
        raise MissingDependencyError("jinja2", "report") from None
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("infermeter.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["num"] = format_number
    env.filters["figure"] = format_figure
    env.filters["plain"] = plain
    return env


@cache
def _plotly_js() -> str:
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise MissingDependencyError("plotly", "report") from None

    return str(get_plotlyjs())


def script_json(value: object) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' survives literally."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _ms(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64) / 1e6


def _run_charts(run: RunLike, prefix: str) -> list[dict[str, Any]]:
    rec = run.records
    if not rec.ok.any():  # nothing completed: no empty axes, the failures say why
        return []
    tokens = "tokens_per_second" in (run.meta.get("metrics") or {})
    latency = {"latency": _ms(rec.latency_ns())}
    bound = latency_bounds_ms(run.meta).get("latency")
    figures = [
        charts.with_bound(charts.cdf(latency, "Latency CDF", "ms"), bound),
        charts.with_bound(charts.histogram(latency, "Latency histogram", "ms"), bound),
    ]
    ttft, tpot = _ms(rec.ttft_ns()), rec.tpot_ns() / 1e6
    bounds = latency_bounds_ms(run.meta)
    if tokens and ttft.size:  # answers that were not streamed have no TTFT
        figures.append(
            charts.with_bound(
                charts.histogram({"TTFT": ttft}, "TTFT", "ms"), bounds.get("TTFT")
            )
        )
    if tokens and tpot.size:
        figures.append(
            charts.with_bound(
                charts.histogram({"TPOT": tpot}, "TPOT", "ms"), bounds.get("TPOT")
            )
        )
    lengths = rec.n_tokens[rec.ok]
    if tokens and lengths.size and lengths.max() > 0:
        figures.append(
            charts.histogram(
                {"output": lengths.astype(np.float64)}, "Output length", "tokens"
            )
        )
    figures += [
        charts.throughput_over_time(rec, tokens),
        charts.in_flight_over_time(rec),
    ]
    scraped = server_charts.load(run.path)
    if scraped is not None:  # the server's view, next to the client's
        figures += server_charts.figures(scraped)
    figures.append(charts.issue_lateness(rec))
    return [{"id": f"{prefix}-{i}", "figure": f} for i, f in enumerate(figures)]


def plain(value: object) -> str:
    """A run.json value as a person reads it: no Python reprs (``None``,
    ``[]``, ``{'numpy': '2.1'}``)."""
    if value is None or value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, dict):
        return "; ".join(f"{k} {plain(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value)
    return str(value)


def _responses(path: Path) -> list[str]:
    """A few model responses from mlperf_log_accuracy.json, decoded from hex."""
    try:
        entries = json.loads((path / "mlperf_log_accuracy.json").read_text())
    except (OSError, ValueError):
        return []
    out = []
    for entry in entries[:MAX_RESPONSES] if isinstance(entries, list) else []:
        try:
            text = bytes.fromhex(str(entry.get("data", ""))).decode("utf-8", "replace")
        except (ValueError, AttributeError):
            continue
        out.append(text[:MAX_RESPONSE_CHARS])
    return out


def _failures(run: RunLike) -> list[tuple[str, int]]:
    rec = run.records
    counts = Counter(int(s) for s in rec.status[rec.status > 0])
    reasons = rec.status_reasons
    return [
        (reasons[code - 1] if code - 1 < len(reasons) else f"status {code}", n)
        for code, n in sorted(counts.items())
    ]


def _number(key: str, value: float) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    if key in ("samples_per_second", "tokens_per_second"):
        return format_rate(value)  # printed as run, diff and compare print it
    return format_number(value, 3)


def _metric_rows(
    metrics: Mapping[str, Any], meta: Mapping[str, Any] | None = None
) -> list[tuple[str, str]]:
    rows = [
        (k, _number(k, v))
        for k, v in metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    meta = meta or {}
    tokens = "tokens_per_second" in metrics
    if "samples_per_second" in metrics or tokens:
        scenario = str(meta.get("scenario", ""))
        rows.append(
            (
                f"{'tokens/s' if tokens else 'samples/s'} definition",
                definition(scenario, tokens=tokens),
            )
        )
    counts = meta.get("token_counts")
    if isinstance(counts, dict) and counts.get("description"):
        rows.append(("token counts", str(counts["description"])))
    for block in ("latency_ns", "ttft_ns", "tpot_ns", "issue_lateness_ns"):
        values = metrics.get(block)
        if isinstance(values, dict) and values:
            label = block.removesuffix("_ns")
            text = ", ".join(f"{k} {float(v) / 1e6:,.3f}" for k, v in values.items())
            rows.append((f"{label} (ms)", text))
    return rows


def _fleet_rows(fleet: Any) -> dict[str, Any] | None:
    """The per-replica table of a fleet run (run.json ``fleet``), as display strings."""
    if not isinstance(fleet, dict) or not fleet.get("replicas"):
        return None
    rows = []
    for r in fleet["replicas"]:
        ttft = r.get("ttft_ms") or {}
        rows.append(
            [
                str(r.get("url", "")),
                f"{r.get('requests', 0):,}",
                f"{r.get('completed', 0):,}",
                f"{r.get('failed', 0):,}",
                " / ".join(
                    f"{ttft[k]:,.1f}" for k in ("p50", "p90", "p99") if k in ttft
                ),
                f"{r['tokens_per_second']:,.1f}" if "tokens_per_second" in r else "-",
            ]
        )
    return {"routing": fleet.get("routing", ""), "rows": rows}


def _run_context(run: RunLike, index: int, extras: Mapping[str, Any]) -> dict[str, Any]:
    meta = run.meta
    sut = meta.get("sut") if isinstance(meta.get("sut"), dict) else {}
    return {
        "id": run.run_id,
        "anchor": f"run-{index}",
        "benchmark": meta.get("benchmark"),
        "scenario": meta.get("scenario"),
        "mode": meta.get("mode"),
        "sut": sut_name(sut),
        "headline": headline(meta, extras.get("comparison")),
        "started_at": meta.get("started_at"),
        "verdict": meta.get("verdict") or {},
        "accuracy": meta.get("accuracy")
        if isinstance(meta.get("accuracy"), dict)
        else None,
        "metrics": _metric_rows(meta.get("metrics") or {}, meta),
        "fleet": _fleet_rows(meta.get("fleet")),
        "environment": meta.get("environment") or {},
        "power": meta.get("power"),
        "charts": _run_charts(run, f"run{index}"),
        "failures": _failures(run),
        "responses": _responses(run.path),
        "comparison": extras.get("comparison"),
        "prediction": extras.get("prediction"),
        "cost": extras.get("cost"),
    }


def _sweep_sections(
    sweeps: Sequence[Path], in_curves: Collection[Path]
) -> list[dict[str, Any]]:
    """A section per sweep; a curve's folder without the figures a section
    needs is left to its curve chart (which reads the Endpoints fields alone)."""
    sections = []
    for i, path in enumerate(sweeps):
        try:
            sections.append(sweep_section(path, i, pareto=path not in in_curves))
        except StoreError:
            if path not in in_curves:
                raise
    return sections


def build_report(
    runs: Sequence[RunLike],
    *,
    sweeps: Sequence[Path] = (),
    extras: Mapping[str, Mapping[str, Any]] | None = None,
    generated_at: str | None = None,
    curves: Mapping[str, Any] | None = None,
    in_curves: Collection[Path] = (),
) -> str:
    """Render the report of ``runs`` (and Pareto curves of ``sweeps``) as HTML.

    ``extras[run_id]`` may carry a ``comparison`` and a ``cost`` dict (as from
    ``infermeter compare --json``) and a ``prediction`` (``report.prediction``:
    the performance model's figure, its kind and anchors); they are shown as
    given, escaped.
    ``curves``: MLPerf Endpoints curves as plain data (``curves``, ``bands``,
    ``table``: runs/endpoints_curve.py's ``report_view``), drawn as one chart;
    the ``sweeps`` drawn there (``in_curves``) have no Pareto chart of their own.
    """
    extras = extras or {}
    contexts = [
        _run_context(r, i, extras.get(r.run_id, {})) for i, r in enumerate(runs)
    ]
    sections = _sweep_sections(sweeps, in_curves)
    all_charts = [c for ctx in contexts for c in ctx["charts"]]
    all_charts += [c for section in sections for c in section["charts"]]
    if curves:
        figure = endpoints_chart.curve_figure(curves["curves"], curves["bands"])
        all_charts.append({"id": "endpoints-curve", "figure": figure})
    if len(runs) > 1:
        overlay = {r.run_id: _ms(r.records.latency_ns()) for r in runs}
        all_charts.append(
            {
                "id": "overlay",
                "figure": charts.cdf(overlay, "Latency CDF, all runs", "ms"),
            }
        )
    template = _environment().get_template("report.html.j2")
    return template.render(
        runs=contexts,
        sweeps=sections,
        curves=curves,
        overlay=len(runs) > 1,
        charts_json=script_json(all_charts),
        plotly_js=_plotly_js(),
        unverified=UNVERIFIED,
        generated_at=generated_at or datetime.now(UTC).isoformat(timespec="seconds"),
    )


def write_report(html: str, path: Path) -> Path:
    """Write via a temporary file so a failed write leaves no half report."""
    with replacing(path) as tmp:
        tmp.write_text(html, encoding="utf-8")
    return path
