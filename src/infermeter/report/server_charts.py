"""Charts of the servers' own metrics (``server_metrics.json``), beside the client's view.

One chart per series (running, waiting, KV-cache usage, ...), one line per
replica; the prefix-cache hit rate per scrape interval is derived from the
hit and query counters where a server exports counters only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infermeter.report.charts import Figure, layout

FILE = "server_metrics.json"
ORDER = (
    "running",
    "waiting",
    "kv_cache_usage",
    "prefix_cache_hit_rate",
    "preemptions",
    "gpu_power",
    "gpu_utilization",
)


def load(folder: Path) -> dict[str, Any] | None:
    """The run's scraped series, or None when it has none (or unreadable)."""
    try:
        data = json.loads((folder / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("series") else None


def _line(name: str, t: list[float], values: list[float]) -> dict[str, Any]:
    return {"type": "scatter", "mode": "lines", "name": name, "x": t, "y": values}


def _derived_hit_rate(series: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-interval hit rate from cumulative hit and query counters, per source."""
    out = []
    by = {(s["source"], s["key"]): s for s in series}
    for (source, key), hits in by.items():
        queries = by.get((source, "prefix_cache_queries"))
        if (
            key != "prefix_cache_hits"
            or queries is None
            or queries["t_s"] != hits["t_s"]
        ):
            continue
        h, q = hits["values"], queries["values"]
        rate = [
            round((h[i] - h[i - 1]) / (q[i] - q[i - 1]), 4) if q[i] > q[i - 1] else None
            for i in range(1, len(q))
        ]
        out.append(
            {
                "key": "prefix_cache_hit_rate",
                "title": "Prefix-cache hit rate (server, per interval)",
                "unit": "fraction",
                "source": source,
                "t_s": hits["t_s"][1:],
                "values": rate,
            }
        )
    return out


def figures(data: dict[str, Any]) -> list[Figure]:
    """One figure per series key present, in ``ORDER``."""
    series = list(data["series"])
    if not any(s["key"] == "prefix_cache_hit_rate" for s in series):
        series += _derived_hit_rate(series)
    sources = data.get("sources") or []
    out = []
    for key in ORDER:
        mine = [s for s in series if s["key"] == key]
        if not any(v for s in mine for v in s["values"] if v is not None):
            continue  # absent, or zero throughout (no preemption): no empty chart
        lines = [
            _line(_source_name(sources, s["source"]), s["t_s"], s["values"])
            for s in mine
        ]
        unit = f"{mine[0]['unit']} ({mine[0].get('metric', 'derived')})"
        axes = layout(mine[0]["title"], "s since the run started", unit)
        out.append({"data": lines, "layout": axes})
    return out


def _source_name(sources: list[dict[str, Any]], index: int) -> str:
    if index < len(sources):
        return str(sources[index].get("replica") or sources[index].get("url"))
    return f"source {index}"
