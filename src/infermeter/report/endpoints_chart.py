"""The MLPerf Endpoints curve chart: step functions overlaid, regions shaded, TTFT p90.

Plain data in (curves as dicts, made by ``runs/endpoints_curve.py``), a plotly figure
dict and a self-contained HTML page out (plotly.js inline, no network). Each curve
is its published step function (system tokens/s against tokens/s per user) with its
points as markers labelled by concurrency and TTFT p90; each region of interest of
the first curve is a shaded band over the per-user speeds its points span.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

Figure = dict[str, Any]
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")
BANDS = {
    "Ultra Low": "rgba(31,119,180,0.08)",
    "Low": "rgba(44,160,44,0.08)",
    "Medium": "rgba(255,127,14,0.08)",
    "High": "rgba(214,39,40,0.08)",
}


def curve_figure(curves: list[dict[str, Any]], bands: list[dict[str, Any]]) -> Figure:
    """``curves``: label, staircase x/y, points (concurrency, system_tps, tps_per_user,
    ttft_p90_ms, region); ``bands``: region label and its [lo, hi] per-user speeds."""
    data: list[dict[str, Any]] = []
    for i, c in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        data.append(_steps(c, colour))
        data.append(_markers(c, colour))
    shown = [b for b in bands if b["region"] in BANDS]
    shapes = [_band(b) for b in shown]
    # narrow neighbouring bands (Ultra Low, Low) would print their names on top of
    # each other: every other name sits a line higher
    notes = [_band_label(b, 1.02 + 0.04 * (i % 2)) for i, b in enumerate(shown)]
    layout = {
        "title": {
            "text": "MLPerf Endpoints curve (infermeter results, unverified); "
            "shaded: the first curve's regions",
            "y": 0.97,
        },
        "xaxis": {"title": {"text": "tokens/s per user (1000 / TPOT p90 ms)"}},
        "yaxis": {"title": {"text": "system tokens/s"}, "rangemode": "tozero"},
        "shapes": shapes,
        "annotations": notes,
        "legend": {"orientation": "h", "y": -0.18},
        "margin": {"t": 90, "r": 20},
        "height": 560,
    }
    return {"data": data, "layout": layout}


def _steps(c: dict[str, Any], colour: str) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": f"{c['label']} (step function)",
        "x": c["step_x"],
        "y": c["step_y"],
        "line": {"color": colour, "width": 2},
        "hoverinfo": "skip",
    }


def _markers(c: dict[str, Any], colour: str) -> dict[str, Any]:
    pts = c["points"]
    return {
        "type": "scatter",
        "mode": "markers+text",
        "name": f"{c['label']} (points)",
        "x": [p["tps_per_user"] for p in pts],
        "y": [p["system_tps"] for p in pts],
        "text": [f"c{p['concurrency']}" for p in pts],
        "textposition": "top right",
        "marker": {"color": colour, "size": 8},
        "customdata": [[p["ttft_p90_ms"], p["region"]] for p in pts],
        "hovertemplate": "concurrency %{text}<br>%{y:,.0f} tok/s, %{x:,.1f} tok/s/user"
        "<br>TTFT p90 %{customdata[0]:.1f} ms<br>%{customdata[1]}<extra></extra>",
        "showlegend": False,
    }


def _band(b: dict[str, Any]) -> dict[str, Any]:
    lo, hi = b["span"]
    return {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": lo,
        "x1": hi,
        "y0": 0,
        "y1": 1,
        "fillcolor": BANDS[b["region"]],
        "line": {"width": 0},
        "layer": "below",
    }


def _band_label(b: dict[str, Any], y: float) -> dict[str, Any]:
    lo, hi = b["span"]
    return {
        "x": (lo + hi) / 2,
        "y": y,
        "xref": "x",
        "yref": "paper",
        "text": b["region"],
        "showarrow": False,
        "font": {"size": 11},
    }


def write_page(path: Path, figure: Figure, table: list[list[str]], title: str) -> Path:
    """A self-contained page: the chart, then the per-region differences table."""
    from plotly.offline import get_plotlyjs

    head, *rows = table or [[]]
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
        for row in rows
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
        "collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style>"
        f"<script>{get_plotlyjs()}</script></head><body><h1>{html.escape(title)}</h1>"
        "<div id='curve'></div>"
        f"<h2>Per region (against the first curve)</h2><table><tr>{cells}</tr>{body}"
        "</table><script>var f = "
        + json.dumps(figure).replace("</", "<\\/")
        + ";Plotly.newPlot('curve', f.data, f.layout, {responsive: true});</script>"
        "</body></html>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
