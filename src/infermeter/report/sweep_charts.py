"""The sweep report: its points against their load, the Pareto front, a table.

Three charts (each only when it has a series to draw) and one row per point:
tokens/s per user against tokens/s with the Pareto front (``charts.pareto``);
TTFT and TPOT p90 against the load with the sweep's limits as dashed lines;
tokens/s against the load with the Pareto points marked. The load is the
concurrency, or the request rate for a rate sweep. Flags come from the
sweep's own ``sweep.json`` where it has them (a point left with requests
unanswered is never Pareto there); else the front is computed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infermeter.report import charts
from infermeter.report.sweep import Point, sweep_limits, sweep_points

Figure = dict[str, Any]
_LIMIT_COLOURS = {"TTFT": "#8a1313", "TPOT": "#5b3a8a"}


def sweep_section(path: Path, index: int, *, pareto: bool = True) -> dict[str, Any]:
    """The report's section for one sweep folder: its charts and its table
    (``pareto`` False: its front is drawn elsewhere, as an Endpoints curve)."""
    points = sweep_points(path)
    _flag_front(points)
    axis = "concurrency" if any(p.get("concurrency") for p in points) else "rate"
    points.sort(key=lambda p: (p.get(axis) or 0.0, p["point"]))
    limits = sweep_limits(path)
    figures = [
        *([charts.pareto(points, f"Pareto front: {path.name}")] if pareto else []),
        latency_by_load(points, axis, limits),
        throughput_by_load(points, axis),
    ]
    return {
        "name": path.name,
        "folder": str(path),
        "charts": [
            {"id": f"sweep-{index}-{k}", "figure": f}
            for k, f in enumerate(figures)
            if f["data"]
        ],
        "table": point_table(
            points, axis, bool(limits.get("ttft_ms") or limits.get("tpot_ms"))
        ),
    }


def _flag_front(points: list[Point]) -> None:
    """Each point's Pareto flag: sweep.json's, else computed from its figures."""
    if all("pareto" in p for p in points):
        return
    for p in points:
        p["pareto"] = not charts.dominated(p, points)


def _x_title(axis: str) -> str:
    return (
        "users (concurrency)" if axis == "concurrency" else "requests/s (target rate)"
    )


def latency_by_load(points: list[Point], axis: str, limits: dict[str, Any]) -> Figure:
    """TTFT p90 (left axis) and TPOT p90 (right axis, often 10-100x smaller)
    against the load, each limit a dashed line on its series' axis."""
    percentile = limits.get("percentile") or 90
    title = f"TTFT and TPOT p{percentile:g} by load"
    layout = _load_layout(title, points, axis, "TTFT ms")
    data = []
    for name, key, limit, y in (
        ("TTFT", "ttft_p90_ms", limits.get("ttft_ms"), "y"),
        ("TPOT", "tpot_p90_ms", limits.get("tpot_ms"), "y2"),
    ):
        shown = [p for p in points if p.get(key) is not None]
        if not shown:
            continue
        colour = _LIMIT_COLOURS[name]
        series = _series(f"{name} p{percentile:g}", shown, axis, key, colour)
        data.append({**series, "yaxis": y})
        if isinstance(limit, int | float):
            _draw_limit(layout, f"{name} limit {limit:g} ms", limit, colour, y)
    if any(trace["yaxis"] == "y2" for trace in data):
        layout["yaxis2"] = {
            "title": {"text": "TPOT ms"}, "overlaying": "y", "side": "right",
            "rangemode": "tozero", "showgrid": False,
        }  # fmt: skip
        layout["margin"] = {**layout["margin"], "r": 60}
    layout["legend"] = {"orientation": "h", "y": -0.3}
    return {"data": data, "layout": layout}


def _load_layout(title: str, points: list[Point], axis: str, y: str) -> dict[str, Any]:
    """A chart against the load; a log axis when the levels span 16x or more
    (1, 4, 16, 64, 256 spread evenly, not crowded at the left)."""
    layout = charts.layout(title, _x_title(axis), y)
    loads = [float(p[axis]) for p in points if p.get(axis)]
    if loads and max(loads) >= 16 * min(loads):
        layout["xaxis"]["type"] = "log"
    layout["yaxis"]["rangemode"] = "tozero"
    return layout


def throughput_by_load(points: list[Point], axis: str) -> Figure:
    """System tokens/s against the load; the Pareto points filled."""
    front = [p for p in points if p.get("pareto")]
    data = [
        _series("tokens/s", points, axis, "system_tps", "#1f77b4"),
        {
            "type": "scatter",
            "mode": "markers",
            "name": "Pareto point",
            "marker": {"symbol": "diamond", "size": 12, "color": "#ff7f0e"},
            "x": [p.get(axis) for p in front],
            "y": [p["system_tps"] for p in front],
            "text": [p["point"] for p in front],
        },
    ]
    layout = _load_layout("Tokens/s by load", points, axis, "tokens/s")
    return {"data": data, "layout": layout}


def _series(name: str, points: list[Point], axis: str, key: str, colour: str) -> Figure:
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "line": {"color": colour},
        "x": [p.get(axis) for p in points],
        "y": [round(float(p[key]), 3) for p in points],
        "text": [p["point"] for p in points],
    }


def _draw_limit(
    layout: dict[str, Any], text: str, value: float, colour: str, yref: str
) -> None:
    layout["shapes"] = [
        *layout.get("shapes", []),
        {
            "type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": yref,
            "y0": value, "y1": value, "line": {"color": colour, "dash": "dash", "width": 2},
        },
    ]  # fmt: skip
    layout["annotations"] = [
        *layout.get("annotations", []),
        {
            "xref": "paper", "x": 0.01 if yref == "y" else 0.99, "yref": yref, "y": value,
            "text": text, "showarrow": False, "yanchor": "bottom",
            "xanchor": "left" if yref == "y" else "right", "font": {"color": colour},
        },
    ]  # fmt: skip


def point_table(points: list[Point], axis: str, limited: bool) -> list[list[str]]:
    """A header row and one row per point (the console table's columns)."""
    load = "users" if axis == "concurrency" else "rate /s"
    header = [
        "point", load, "tokens/s", "tokens/s per user", "TTFT p90 ms", "TPOT p90 ms",
        "completed", "failed", "unanswered", "Pareto",
    ]  # fmt: skip
    rows = [header + (["meets limits"] if limited else [])]
    for p in points:
        row = [
            p["point"],
            _figure(p.get(axis)),
            _figure(p.get("system_tps")),
            _figure(p.get("tps_per_user")),
            _figure(p.get("ttft_p90_ms")),
            _figure(p.get("tpot_p90_ms")),
            *(_count(p.get(k)) for k in ("completed", "failed", "unanswered")),
            "yes" if p.get("pareto") else "no",
        ]
        if limited:
            meets = p.get("meets_limits")
            row.append("" if meets is None else "yes" if meets else "no")
        rows.append(row)
    return rows


def _figure(value: object) -> str:
    if not isinstance(value, int | float):
        return "n/a"
    if float(value).is_integer() and abs(value) < 1e6:
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else ""
