"""The run folder: MLPerf logs, ``records.npz`` and ``run.json`` (format in docs/design.md)."""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import platform
import socket
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.loadgen.logs.files import LogOutput, write_logs
from infermeter.loadgen.runner import RunOutcome
from infermeter.loadgen.settings import EffectiveSettings, RunSettings
from infermeter.loadgen.summary import LatencyStats, Summary
from infermeter.version import __version__

SCHEMA_VERSION = 1
# The effective settings run.json keeps, for both engines.
EFFECTIVE_KEYS = (
    "samples_per_query",
    "target_qps",
    "target_latency_ns",
    "target_latency_percentile",
    "max_async_queries",
    "min_duration_ms",
    "max_duration_ms",
    "min_query_count",
    "max_query_count",
    "min_sample_count",
    "performance_sample_count",
    "accuracy_sample_count",
    "qsl_rng_seed",
    "sample_index_rng_seed",
    "schedule_rng_seed",
)
PACKAGES = ("numpy", "aiohttp", "onnxruntime", "torch", "mlcommons-loadgen")


def write_run_folder(
    folder: Path,
    outcome: RunOutcome,
    *,
    meta: dict[str, Any],
    trace: bool = False,
    sent_ns: np.ndarray[Any, Any] | None = None,
) -> dict[str, Any]:
    """Write every file of the run folder; returns the run.json document.

    ``sent_ns`` (absolute, per sample) is when an HTTP SUT put each request on
    the wire; records.npz keeps it beside the engine's issue time.
    """
    folder.mkdir(parents=True, exist_ok=True)
    files = [p.name for p in write_logs(outcome, LogOutput(folder, enable_trace=trace))]
    if outcome.performance is not None:
        _write_records(folder / "records.npz", outcome, sent_ns)
        files.append("records.npz")
    doc = run_document(outcome, meta=meta, files=files, run_id=folder.name)
    (folder / "run.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return doc


def update_run_json(folder: Path, **changes: Any) -> dict[str, Any]:
    """Add top-level keys to an existing run.json; returns the new document."""
    path = folder / "run.json"
    doc: dict[str, Any] = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return doc


def _write_records(
    path: Path, outcome: RunOutcome, sent_ns: np.ndarray[Any, Any] | None
) -> None:
    phase = outcome.performance
    assert phase is not None
    n = phase.samples_issued
    rec = phase.records
    query = phase.schedule.query_of_samples()[:n]
    origin = phase.query_origin_ns[query]
    start = phase.start_ns

    def rel(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        if values.shape[0] < n:  # token columns exist on token runs only
            return np.full(n, -1, dtype=np.int64)
        return np.where(values[:n] < 0, -1, values[:n] - start)

    arrays: dict[str, Any] = {
        "scheduled_ns": origin - start,
        "issued_ns": rel(rec.issued_ns),
        "first_token_ns": rel(rec.first_token_ns),
        "completed_ns": rel(rec.completed_ns),
        "sample_index": phase.schedule.sample_indices[:n],
        "query_index": query,
        "n_tokens": rec.tokens_of(n),
        "status": rec.status[:n],
        "status_reasons": np.asarray(rec.status_reasons, dtype=str),
    }
    if sent_ns is not None:
        arrays["sent_ns"] = rel(sent_ns)
    np.savez_compressed(path, **arrays)


def run_document(
    outcome: RunOutcome, *, meta: dict[str, Any], files: list[str], run_id: str
) -> dict[str, Any]:
    """The run.json document."""
    summary = outcome.summary
    valid = outcome.valid
    reasons = _reasons(summary) if summary is not None else []
    if summary is None and outcome.detail.errors and not outcome.interrupted:
        reasons.append(
            f"{outcome.detail.errors} errors logged; see mlperf_log_detail.txt"
        )
    if outcome.interrupted:  # the first reason, said once
        reasons = [outcome.interrupted] + [
            r for r in reasons if r != f"ERROR: {outcome.interrupted}"
        ]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "infermeter_version": __version__,
        "started_at": outcome.started_at.isoformat(),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(),
        "scenario": outcome.settings.scenario.value,
        "mode": outcome.settings.requested.mode.value,
        "label": "infermeter result (unverified)",
        "interrupted": outcome.interrupted is not None,
        **meta,
        "settings": {
            "requested": _settings_dict(outcome.settings.requested),
            "effective": _effective_dict(outcome.settings),
        },
        "verdict": {
            "result": None if valid is None else ("VALID" if valid else "INVALID"),
            "valid": valid,
            "reasons": reasons,
        },
        "metrics": metrics_of(summary) if summary is not None else {},
        "find_peak_trials": [{"qps": q, "valid": v} for q, v in outcome.peak_trials],
        "environment": environment(),
        "files": files,
    }


def _reasons(summary: Summary) -> list[str]:
    """Why the run is INVALID. When no sample completed, LoadGen's advice about
    rates and durations is beside the point: what failed comes first, alone."""
    reasons = list(summary.reasons)
    if summary.sample_count or not (summary.samples_failed or summary.samples_missing):
        return reasons
    advice = {
        summary.perf_recommendation,
        summary.min_duration_recommendation,
        "The test exited early, before enough queries were issued.",
    }
    head = (
        f"No sample completed ({summary.samples_failed} failed, "
        f"{summary.samples_missing} never answered): the run measured nothing."
    )
    return [head] + [
        r for r in reasons if r not in advice and "early stopping" not in r
    ]


def _settings_dict(settings: RunSettings) -> dict[str, Any]:
    raw = asdict(settings)
    raw["scenario"] = settings.scenario.value
    raw["mode"] = settings.mode.value
    return raw


def _effective_dict(eff: EffectiveSettings) -> dict[str, Any]:
    return {key: getattr(eff, key) for key in EFFECTIVE_KEYS}


def _stats(stats: LatencyStats | None) -> dict[str, int] | None:
    if stats is None:
        return None
    out = {"min": stats.min, "max": stats.max, "mean": stats.mean}
    for p, value in stats.percentiles.items():
        out[f"p{p * 100:g}"] = value
    return out


def metrics_of(s: Summary) -> dict[str, Any]:
    """Headline metrics for run.json, the store and the console."""
    duration = s.max_latency_s if s.scenario.value == "Offline" else s.final_done_s
    metrics: dict[str, Any] = {
        "queries_issued": s.query_count,
        "samples_issued": s.sample_count + s.samples_failed + s.samples_missing,
        "samples_completed": s.sample_count,
        "samples_failed": s.samples_failed,
        "samples_missing": s.samples_missing,
        "failure_reasons": s.failure_reasons,
        "duration_s": duration,
        "target_qps": s.settings.target_qps,
        "samples_per_second": _headline_sps(s),
        "latency_ns": _stats(s.latency),
    }
    if s.query_latency is not None:
        metrics["query_latency_ns"] = _stats(s.query_latency)
    if s.settings.is_token_run:
        metrics["tokens_per_second"] = s.tokens_per_second
        metrics["token_count"] = s.token_count
        metrics["ttft_ns"] = _stats(s.ttft)
        metrics["tpot_ns"] = _stats(s.tpot)
    if s.issue_lateness is not None:
        metrics["issue_lateness_ns"] = _stats(s.issue_lateness)
    if s.early_stopping is not None and s.early_stopping.estimate_ns:
        metrics["early_stopping_estimate_ns"] = s.early_stopping.estimate_ns
    return {k: v for k, v in metrics.items() if v is not None}


def _headline_sps(s: Summary) -> float:
    scenario = s.scenario.value
    if scenario == "Offline":
        return s.samples_per_second
    if scenario == "Server":
        return s.completed_samples_per_second
    return s.qps_with_loadgen_overhead


def environment() -> dict[str, Any]:
    """Host, CPU, GPU and package versions, for run.json and the store."""
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu": _gpu_name(),
        "packages": {name: _version(name) for name in PACKAGES if _version(name)},
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _gpu_name() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # no NVML, no GPU: both mean "no GPU" here
        return None


@functools.cache  # read from each package's METADATA file: ~7 ms a name
def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None
