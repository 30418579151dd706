"""MLPerf Endpoints-style figures of one load point, and its ``result_summary.json``.

Per point: system tokens/s, tokens/s per user (1000 / TPOT p90 ms), TTFT p90
and the concurrency, plus the Endpoints result-summary rollups (spec section
10). Latencies count from each request's scheduled time, so client queueing
is never hidden. These are infermeter results (unverified).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.engine import PhaseResult
from infermeter.loadgen.records import STATUS_OK, UNSET

ROLLUP_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
LABEL = "infermeter results (unverified)"
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PointMetrics:
    """The Endpoints curve figures of one point, and the series they came from."""

    concurrency: float
    target_rate: float | None
    issued: int
    completed: int
    failed: int
    duration_ns: int
    output_tokens: int
    system_tps: float
    qps: float
    ttft_p90_ms: float | None
    tpot_p90_ms: float | None
    tps_per_user: float | None
    ttft_ns: I64 = field(repr=False)
    tpot_ns: I64 = field(repr=False)
    latency_ns: I64 = field(repr=False)
    n_tokens: I64 = field(repr=False)
    failure_reasons: dict[str, int] = field(default_factory=dict)

    @property
    def unanswered(self) -> int:
        """Requests issued that neither completed nor failed: the point's wait
        for them ran out (its completion timeout), so its window is cut short."""
        return self.issued - self.completed - self.failed

    def curve_row(self) -> dict[str, Any]:
        """One row of the Pareto table."""
        return {
            "concurrency": self.concurrency,
            "target_rate": self.target_rate,
            "system_tps": round(self.system_tps, 3),
            "tps_per_user": _round(self.tps_per_user),
            "ttft_p90_ms": _round(self.ttft_p90_ms),
            "tpot_p90_ms": _round(self.tpot_p90_ms),
            "qps": round(self.qps, 3),
            "completed": self.completed,
            "failed": self.failed,
            "unanswered": self.unanswered,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def point_metrics(
    phase: PhaseResult, *, concurrency: float | None = None, target_rate: float | None
) -> PointMetrics:
    """Figures of a finished phase (one sample per query)."""
    rec = phase.records
    n = phase.samples_issued
    scheduled = phase.query_origin_ns[:n]
    done = rec.completed_ns[:n]
    ok = (rec.status[:n] == STATUS_OK) & (done != UNSET)
    failed = (rec.status[:n] != STATUS_OK) & (done != UNSET)
    first = rec.first_token_ns[:n] if rec.has_tokens else np.full(n, -1, dtype=np.int64)
    tokens = rec.tokens_of(n)
    ttft = (first - scheduled)[ok & (first != UNSET)]
    multi = ok & (first != UNSET) & (tokens > 1)
    tpot = (done[multi] - first[multi]) // (tokens[multi] - 1)
    latency = (done - scheduled)[ok]
    end = int(done[done != UNSET].max()) if (done != UNSET).any() else phase.start_ns
    duration = max(1, end - phase.start_ns)
    out_tokens = int(tokens[ok].sum())
    tpot_p90 = _p_ms(tpot, 90)
    if concurrency is None:  # Little's law: mean requests in flight
        concurrency = float(latency.sum()) / duration if latency.size else 0.0
    return PointMetrics(
        concurrency=round(concurrency, 3),
        target_rate=target_rate,
        issued=n,
        completed=int(ok.sum()),
        failed=int(failed.sum()),
        duration_ns=duration,
        output_tokens=out_tokens,
        system_tps=out_tokens / (duration / 1e9),
        qps=int(ok.sum()) / (duration / 1e9),
        ttft_p90_ms=_p_ms(ttft, 90),
        tpot_p90_ms=tpot_p90,
        tps_per_user=1000.0 / tpot_p90 if tpot_p90 else None,
        ttft_ns=ttft,
        tpot_ns=tpot,
        latency_ns=latency,
        n_tokens=tokens[ok],
        failure_reasons=_reasons(rec.status_reasons, rec.status[:n]),
    )


def _p_ms(values: I64, p: float) -> float | None:
    if values.size == 0:
        return None
    return float(np.percentile(values, p, method="higher")) / 1e6


def _reasons(reasons: list[str], status: npt.NDArray[np.uint8]) -> dict[str, int]:
    codes, counts = np.unique(status[status != STATUS_OK], return_counts=True)
    return {reasons[int(c) - 1]: int(k) for c, k in zip(codes, counts, strict=True)}


def rollup(values: I64) -> dict[str, Any]:
    """An Endpoints series rollup: total, min, max, avg, std_dev, median, percentiles."""
    if values.size == 0:
        return {"total": 0}
    counts, edges = np.histogram(values, bins=20)
    pct = np.percentile(values, ROLLUP_PERCENTILES, method="higher")
    return {
        "total": int(values.sum()),
        "min": int(values.min()),
        "max": int(values.max()),
        "avg": float(values.mean()),
        "std_dev": float(values.std()),
        "median": float(np.median(values)),
        "percentiles": {
            f"{p:g}": int(v) for p, v in zip(ROLLUP_PERCENTILES, pct, strict=True)
        },
        "histogram": {"buckets": edges.tolist(), "counts": counts.tolist()},
    }


def result_summary(
    point: PointMetrics,
    *,
    started_at: dt.datetime,
    run_config: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The point's ``result_summary.json`` in the MLPerf Endpoints layout."""
    return {
        "version": "infermeter-0.1",
        "git_sha": None,
        "test_started_at": started_at.isoformat(),
        "n_samples_issued": point.issued,
        "n_samples_completed": point.completed,
        "n_samples_failed": point.failed,
        "duration_ns": point.duration_ns,
        "state": "complete",
        "complete": point.unanswered == 0,
        "ttft": rollup(point.ttft_ns),
        "tpot": rollup(point.tpot_ns),
        "latency": rollup(point.latency_ns),
        "input_sequence_lengths": None,
        "output_sequence_lengths": rollup(point.n_tokens),
        "legacy_loadgen_window_duration_ns": point.duration_ns,
        "qps": point.qps,
        "tps": point.system_tps,
        "finish_reason_counts": None,
        "run_config": run_config,
        "accuracy": None,
        "infermeter": {
            "label": LABEL,
            "curve": point.curve_row(),
            "failure_reasons": point.failure_reasons,
            **(extra or {}),
        },
    }


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return path
