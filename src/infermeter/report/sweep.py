"""Points of a sweep folder (one sub-folder per load point) for the Pareto curve.

A point is a sub-folder with ``run.json`` (infermeter) or ``result_summary.json``
(MLPerf Endpoints, also under ``performance/``). Endpoints series values are in
ns, like its ``duration_ns``; per-user speed is 1000 / TPOT p90 in ms.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infermeter.errors import StoreError


def is_sweep(path: Path) -> bool:
    return (
        path.is_dir() and not (path / "run.json").exists() and bool(_point_dirs(path))
    )


def _point_dirs(path: Path) -> list[Path]:
    return sorted(
        d
        for d in path.iterdir()
        if d.is_dir()
        and any(
            (d / name).is_file()
            for name in (
                "run.json",
                "result_summary.json",
                "performance/result_summary.json",
            )
        )
    )


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreError(f"{str(path)!r} is unreadable ({exc}).") from None
    if not isinstance(data, dict):
        raise StoreError(f"{str(path)!r} is not a JSON object.")
    return data


def _from_run_json(data: dict[str, Any]) -> dict[str, float] | None:
    m = data.get("metrics") or {}
    tps, tpot = m.get("tokens_per_second"), (m.get("tpot_ns") or {}).get("p90")
    if not tps or not tpot:
        return None
    return {
        "system_tps": float(tps),
        "tps_per_user": 1e9 / float(tpot),
        "concurrency": float(m.get("target_qps") or 0.0),
    }


def _from_summary(data: dict[str, Any]) -> dict[str, float] | None:
    tpot = ((data.get("tpot") or {}).get("percentiles") or {}).get("90")
    tps = data.get("tps")
    if not tps or not tpot:
        return None
    config = data.get("run_config") or {}
    concurrency = config.get("concurrency") if isinstance(config, dict) else None
    return {
        "system_tps": float(tps),
        "tps_per_user": 1e9 / float(tpot),
        "concurrency": float(concurrency or 0.0),
    }


def sweep_points(path: Path) -> list[dict[str, float]]:
    """One point per sub-folder that reports tokens/s and TPOT p90."""
    points = []
    for folder in _point_dirs(path):
        if (folder / "run.json").is_file():
            point = _from_run_json(_load(folder / "run.json"))
        else:
            summary = folder / "result_summary.json"
            if not summary.is_file():
                summary = folder / "performance" / "result_summary.json"
            point = _from_summary(_load(summary))
        if point is not None:
            points.append(point)
    if not points:
        raise StoreError(
            f"Sweep folder {str(path)!r} has no points with tokens/s and TPOT p90."
        )
    return points
