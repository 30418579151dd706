"""Plotly figure specs (plain dicts) from a run's records; downsampled to stay small."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.report.model import RecordsLike

Figure = dict[str, Any]
MAX_POINTS = 1000
BINS = 60


def _layout(title: str, x: str, y: str) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.02, "xanchor": "left"},
        "xaxis": {"title": {"text": x}},
        "yaxis": {"title": {"text": y}},
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "height": 320,
    }


layout = _layout  # for the other chart modules of the report


def cdf(series: dict[str, npt.NDArray[np.float64]], title: str, unit: str) -> Figure:
    """Empirical CDF per series, at most MAX_POINTS points each."""
    data = []
    for name, values in series.items():
        if values.size == 0:
            continue
        ordered = np.sort(values)
        picks = np.unique(
            np.linspace(0, ordered.size - 1, min(MAX_POINTS, ordered.size))
        )
        idx = picks.astype(np.int64)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": ordered[idx].round(4).tolist(),
                "y": ((idx + 1) / ordered.size).round(5).tolist(),
            }
        )
    return {"data": data, "layout": _layout(title, unit, "fraction of samples")}


def histogram(
    series: dict[str, npt.NDArray[np.float64]], title: str, unit: str
) -> Figure:
    """Pre-binned histograms (bars), so the raw samples are not embedded."""
    data = []
    for name, values in series.items():
        if values.size == 0:
            continue
        counts, edges = np.histogram(values, bins=BINS)
        centres = (edges[:-1] + edges[1:]) / 2
        data.append(
            {
                "type": "bar",
                "name": name,
                "opacity": 0.7,
                "x": centres.round(4).tolist(),
                "y": counts.tolist(),
            }
        )
    layout = _layout(title, unit, "samples")
    layout["barmode"] = "overlay"
    return {"data": data, "layout": layout}


def _grid(end_ns: float, bins: int = 200) -> npt.NDArray[np.float64]:
    return np.linspace(0.0, max(end_ns, 1.0), bins + 1)


def throughput_over_time(rec: RecordsLike, tokens: bool) -> Figure:
    """Completions (or tokens) per second in time bins."""
    ok = rec.ok
    done = rec.completed_ns[ok].astype(np.float64)
    weights = rec.n_tokens[ok].astype(np.float64) if tokens else None
    end = float(done.max()) if done.size else 1.0
    # About one bin per second, between 20 and 100 bins: smooth enough to read.
    edges = _grid(end, int(min(100, max(20, end / 1e9))))
    sums, _ = np.histogram(done, bins=edges, weights=weights)
    width_s = (edges[1] - edges[0]) / 1e9
    unit = "tokens/s" if tokens else "samples/s"
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": unit,
            "line": {"shape": "hv"},
            "x": (edges[:-1] / 1e9).round(4).tolist(),
            "y": (sums / width_s).round(3).tolist(),
        }
    ]
    return {"data": data, "layout": _layout(f"Throughput ({unit})", "s", unit)}


def in_flight_over_time(rec: RecordsLike) -> Figure:
    """Requests issued but not yet finished, sampled on a time grid."""
    issued = np.sort(rec.issued_ns[rec.issued_ns >= 0].astype(np.float64))
    finished = np.sort(rec.completed_ns[rec.completed_ns >= 0].astype(np.float64))
    end = max(
        float(issued.max()) if issued.size else 1.0,
        float(finished.max()) if finished.size else 1.0,
    )
    grid = _grid(end, 400)
    level = np.searchsorted(issued, grid, "right") - np.searchsorted(
        finished, grid, "right"
    )
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "in flight",
            "line": {"shape": "hv"},
            "x": (grid / 1e9).round(4).tolist(),
            "y": level.tolist(),
        }
    ]
    return {"data": data, "layout": _layout("Requests in flight", "s", "requests")}


def issue_lateness(rec: RecordsLike) -> Figure:
    """How late the load generator issued each sample (issued - scheduled), in us."""
    mask = rec.issued_ns >= 0
    late = (rec.issued_ns[mask] - rec.scheduled_ns[mask]).astype(np.float64) / 1e3
    figure = histogram({"lateness": late}, "Issue lateness", "µs")
    figure["layout"]["showlegend"] = False
    return figure


def with_bound(figure: Figure, bound_ms: float | None) -> Figure:
    """``figure`` with the bound its series is judged on drawn as a dashed line."""
    if bound_ms is None:
        return figure
    layout = figure["layout"]
    layout["shapes"] = [
        *layout.get("shapes", []),
        {
            "type": "line", "x0": bound_ms, "x1": bound_ms, "y0": 0, "y1": 1,
            "yref": "paper", "line": {"color": "#8a1313", "dash": "dash", "width": 2},
        },
    ]  # fmt: skip
    layout["annotations"] = [
        *layout.get("annotations", []),
        {
            "x": bound_ms, "y": 1, "yref": "paper", "text": f"bound {bound_ms:g} ms",
            "showarrow": False, "xanchor": "left", "font": {"color": "#8a1313"},
        },
    ]  # fmt: skip
    return figure


def dominated(p: dict[str, Any], points: list[dict[str, Any]]) -> bool:
    """Whether another point is at least as fast per user and in total, and faster in one."""
    return any(
        q["tps_per_user"] >= p["tps_per_user"]
        and q["system_tps"] >= p["system_tps"]
        and (q["tps_per_user"], q["system_tps"]) != (p["tps_per_user"], p["system_tps"])
        for q in points
    )


def _load_label(point: dict[str, Any]) -> str:
    if point.get("concurrency"):
        return f"concurrency {point['concurrency']:.0f}"
    if point.get("rate"):
        return f"rate {point['rate']:g}/s"
    return "load ?"


def pareto(points: list[dict[str, Any]], title: str) -> Figure:
    """Throughput vs per-user speed: every point, labelled with its load, and
    the Pareto front: the points flagged ``pareto`` (the sweep's own flags, or
    ``dominated`` where it has none: ``sweep_charts``)."""
    ordered = sorted(points, key=lambda p: p["tps_per_user"])
    front = [p for p in ordered if p["pareto"]]
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "Pareto front",
            "line": {"shape": "hv"},
            "x": [p["tps_per_user"] for p in front],
            "y": [p["system_tps"] for p in front],
            "text": [_load_label(p) for p in front],
        },
        {
            "type": "scatter",
            "mode": "markers+text",
            "name": "every point",
            "textposition": "top center",
            "marker": {"symbol": "circle-open", "size": 10},
            "x": [p["tps_per_user"] for p in ordered],
            "y": [p["system_tps"] for p in ordered],
            "text": [_load_label(p) for p in ordered],
        },
    ]
    return {"data": data, "layout": _layout(title, "tokens/s per user", "tokens/s")}
