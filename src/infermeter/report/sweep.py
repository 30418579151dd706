"""Points of a sweep folder (one sub-folder per load point) for the sweep report.

A point is a sub-folder with ``run.json`` (infermeter) or ``result_summary.json``
(MLPerf Endpoints, also under ``performance/``). Endpoints series values are in
ns, like its ``duration_ns``; per-user speed is 1000 / TPOT p90 in ms. The
``sweep.json`` that ``infermeter sweep`` writes beside its points adds what the
points alone do not say: the limits, each point's Pareto flag and verdict, and
its counts (completed, failed, unanswered).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infermeter import jsonfile
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
        data = jsonfile.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"{str(path)!r} is unreadable ({exc}).") from None
    if not isinstance(data, dict):
        raise StoreError(f"{str(path)!r} is not a JSON object.")
    return data


Point = dict[str, Any]


def _from_run_json(data: dict[str, Any]) -> Point | None:
    m = data.get("metrics") or {}
    tps, tpot = m.get("tokens_per_second"), (m.get("tpot_ns") or {}).get("p90")
    if not tps or not tpot:
        return None
    ttft = (m.get("ttft_ns") or {}).get("p90")
    return {
        "system_tps": float(tps),
        "tps_per_user": 1e9 / float(tpot),
        "concurrency": float(m.get("target_qps") or 0.0),
        "ttft_p90_ms": float(ttft) / 1e6 if isinstance(ttft, int | float) else None,
        "tpot_p90_ms": float(tpot) / 1e6,
    }


def _from_summary(data: dict[str, Any]) -> Point | None:
    tps = data.get("tps")
    per_user = _per_user_speed(data)
    if not tps or not per_user:
        return None
    config = data.get("run_config")
    config = config if isinstance(config, dict) else {}
    # Endpoints nests the load under "load"; older files had it at the top.
    nested = config.get("load")
    load: dict[str, Any] = nested if isinstance(nested, dict) else config
    ttft, tpot = _p90(data.get("ttft")), _p90(data.get("tpot"))
    mode = load.get("mode")
    return {
        "system_tps": float(tps),
        "tps_per_user": per_user,
        # A rate point's load has a concurrency too (unused): its mode says.
        "concurrency": float(load.get("concurrency") or 0.0) if mode != "rate" else 0.0,
        "rate": float(load.get("rate") or 0.0) if mode != "concurrency" else 0.0,
        "ttft_p90_ms": ttft / 1e6 if ttft else None,
        "tpot_p90_ms": tpot / 1e6 if tpot else None,
        **_counts(data),
    }


def _counts(data: dict[str, Any]) -> dict[str, int]:
    """Completed, failed and unanswered requests of an Endpoints summary."""
    return _split_issued(
        data.get("n_samples_issued"),
        data.get("n_samples_completed"),
        data.get("n_samples_failed"),
    )


def _split_issued(issued: object, completed: object, failed: object) -> dict[str, int]:
    if not (
        isinstance(issued, int)
        and isinstance(completed, int)
        and isinstance(failed, int)
    ):
        return {}
    return {
        "completed": completed,
        "failed": failed,
        "unanswered": issued - completed - failed,
    }


def _per_user_speed(data: dict[str, Any]) -> float | None:
    """1000 / TPOT p90 (ms); an answer not streamed has no TPOT: its output
    tokens over the request latency p90 instead (one user waits that long)."""
    tpot = _p90(data.get("tpot"))
    if tpot:
        return 1e9 / tpot
    latency = _p90(data.get("latency"))
    lengths = data.get("output_sequence_lengths")
    tokens = lengths.get("avg") if isinstance(lengths, dict) else None
    if latency and isinstance(tokens, int | float) and tokens > 0:
        return float(tokens) * 1e9 / latency
    return None


def _p90(series: object) -> float | None:
    if not isinstance(series, dict):
        return None
    value = (series.get("percentiles") or {}).get("90")
    return float(value) if isinstance(value, int | float) and value > 0 else None


def sweep_points(path: Path) -> list[Point]:
    """One point per sub-folder that reports tokens/s and TPOT p90, named by
    its folder; with ``sweep.json``'s flags and counts where it has the point."""
    listed = _listed_points(path)
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
            point["point"] = folder.name
            point.update(listed.get(folder.name, {}))
            points.append(point)
    if not points:
        raise StoreError(
            f"Sweep folder {str(path)!r} has no points with tokens/s and a "
            "TPOT or latency p90."
        )
    return points


def sweep_limits(path: Path) -> dict[str, Any]:
    """The limits in ``sweep.json`` (``ttft_ms``, ``tpot_ms``, ``percentile``);
    empty when the folder has none (the reference client's, say)."""
    limits = _sweep_json(path).get("limits")
    return limits if isinstance(limits, dict) else {}


_FROM_SWEEP_JSON = ("pareto", "meets_limits", "completed", "failed", "unanswered")


def _listed_points(path: Path) -> dict[str, dict[str, Any]]:
    """What ``sweep.json`` says of each point, by folder name."""
    listed: dict[str, dict[str, Any]] = {}
    for row in _sweep_json(path).get("points") or []:
        if not isinstance(row, dict) or not isinstance(row.get("point"), str):
            continue
        # Written before "unanswered" existed: what neither completed nor failed.
        known: dict[str, Any] = _split_issued(
            row.get("issued"), row.get("completed"), row.get("failed")
        )
        known.update((k, row[k]) for k in _FROM_SWEEP_JSON if k in row)
        listed[row["point"]] = known
    return listed


def _sweep_json(path: Path) -> dict[str, Any]:
    file = path / "sweep.json"
    return _load(file) if file.is_file() else {}
