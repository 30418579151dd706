"""Score a run folder: rebuild its dataset from run.json (or the user's flags) and score the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infermeter.errors import DatasetError
from infermeter.workloads.accuracy.images import ImageScoring
from infermeter.workloads.accuracy.log import LOG_NAME
from infermeter.workloads.accuracy.scorer import (
    AccuracyReport,
    ResponseFormat,
    score_accuracy_log,
)
from infermeter.workloads.datasets.factory import DatasetOptions, build_qsl
from infermeter.workloads.registry import get_benchmark


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """run.json of ``run_dir`` ({} when absent: a folder from the official LoadGen)."""
    path = run_dir / "run.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{str(path)!r} is not valid JSON ({exc.msg}).") from None
    return data if isinstance(data, dict) else {}


def score_run_folder(
    run_dir: str | Path,
    *,
    benchmark: str | None = None,
    dataset: str | Path | None = None,
    fmt: str | None = None,
    allow_pickle: bool = False,
    tokenizer: str | Path | None = None,
    samples: int | None = None,
    level: float | None = None,
    dtype: str | None = None,
    response_format: ResponseFormat = "auto",
    image_scoring: ImageScoring | None = None,
) -> AccuracyReport:
    """Score ``run_dir``'s accuracy log; flags override what run.json records."""
    run_dir = Path(run_dir)
    log = run_dir / LOG_NAME if run_dir.is_dir() else run_dir
    folder = log.parent
    info = read_run_json(folder)
    name = benchmark or info.get("benchmark")
    if not name:
        raise DatasetError(
            f"No run.json in {str(folder)!r} names the benchmark; pass --benchmark."
        )
    bench = get_benchmark(str(name))
    recorded = info.get("dataset") or {}
    path = dataset or recorded.get("path")
    options = DatasetOptions(
        samples=samples or (None if path else recorded.get("total_sample_count")),
        tokenizer=tokenizer or recorded.get("tokenizer_path"),
        seed=int(recorded.get("seed", 0)),
        allow_pickle=allow_pickle,
    )
    qsl = build_qsl(bench, path, fmt=fmt or recorded.get("format"), options=options)
    return score_accuracy_log(
        log,
        bench,
        qsl,
        level=level,
        dtype=dtype,
        response_format=response_format,
        image_scoring=image_scoring,
    )
