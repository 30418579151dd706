"""Write run folders in the format of docs/design.md, for results and report tests.

Used until (and beside) real runs of the engine: the records are synthetic but
the files, keys and arrays are the ones ``infermeter run`` writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

PERCENTILES = {"p50": 50, "p90": 90, "p95": 95, "p97": 97, "p99": 99, "p99.9": 99.9}


def _block(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {}
    block = {"min": float(values.min()), "max": float(values.max())}
    block["mean"] = float(values.mean())
    block.update({k: float(np.percentile(values, p)) for k, p in PERCENTILES.items()})
    return block


def make_records(
    *,
    n: int,
    scenario: str,
    latency_ms: float,
    jitter: float,
    seed: int,
    qps: float,
    tokens: bool,
    failures: int = 0,
) -> dict[str, np.ndarray]:
    """Synthetic per-sample arrays: Poisson arrivals (Server) or all at 0 (Offline)."""
    rng = np.random.default_rng(seed)
    if scenario == "Offline":
        scheduled = np.zeros(n, dtype=np.int64)
        service = rng.gamma(4.0, latency_ms / 4.0, n) * 1e6 / 8
        completed = np.cumsum(service).astype(np.int64) + 1_000_000
    else:
        gaps = rng.exponential(1.0 / qps, n) * 1e9
        scheduled = np.cumsum(gaps).astype(np.int64)
        lat = latency_ms * 1e6 * np.exp(rng.normal(0.0, jitter, n) - jitter**2 / 2)
        completed = scheduled + lat.astype(np.int64)
    issued = scheduled + rng.integers(1_000, 50_000, n)
    n_tokens = rng.integers(100, 400, n) if tokens else np.zeros(n, dtype=np.int64)
    first = issued + ((completed - issued) * 0.1).astype(np.int64) if tokens else None
    status = np.zeros(n, dtype=np.uint8)
    status[:failures] = 1
    completed[:failures] = -1
    first_token = first if first is not None else np.full(n, -1, dtype=np.int64)
    if failures and tokens:
        first_token[:failures] = -1
    return {
        "scheduled_ns": scheduled,
        "issued_ns": issued.astype(np.int64),
        "first_token_ns": first_token.astype(np.int64),
        "completed_ns": completed.astype(np.int64),
        "sample_index": rng.integers(0, 1024, n).astype(np.int64),
        "query_index": np.arange(n, dtype=np.int64),
        "n_tokens": n_tokens.astype(np.int64),
        "status": status,
    }


def _metrics(rec: dict[str, np.ndarray], tokens: bool, qps: float) -> dict[str, Any]:
    ok = rec["status"] == 0
    end = int(rec["completed_ns"][ok].max())
    duration_s = end / 1e9
    lat = (rec["completed_ns"] - rec["scheduled_ns"])[ok]
    metrics: dict[str, Any] = {
        "samples_per_second": float(ok.sum() / duration_s),
        "queries_issued": len(ok),
        "samples_issued": len(ok),
        "samples_completed": int(ok.sum()),
        "samples_failed": int((~ok).sum()),
        "duration_s": duration_s,
        "target_qps": qps,
        "latency_ns": _block(lat),
        "issue_lateness_ns": {"p50": 10_000.0, "p99": 40_000.0, "max": 50_000.0},
    }
    if tokens:
        toks = rec["n_tokens"][ok]
        first = rec["first_token_ns"][ok]
        metrics["tokens_per_second"] = float(toks.sum() / duration_s)
        metrics["ttft_ns"] = _block(first - rec["scheduled_ns"][ok])
        metrics["tpot_ns"] = _block((rec["completed_ns"][ok] - first) / (toks - 1))
    return metrics


def write_run(
    folder: Path,
    *,
    run_id: str | None = None,
    benchmark: str = "llama2-70b",
    scenario: str = "Server",
    n: int = 400,
    latency_ms: float = 200.0,
    jitter: float = 0.3,
    seed: int = 0,
    qps: float = 20.0,
    tokens: bool = True,
    failures: int = 0,
    reasons: tuple[str, ...] = ("HTTP 500: upstream error",),
    sut_name: str = "FakeSUT",
    responses: list[str] | None = None,
    gpu: Any = None,
    verdict_reasons: tuple[str, ...] = (),
    sut_kind: str = "fake",
    sut_params: dict[str, Any] | None = None,
) -> Path:
    """Write run.json, records.npz and the MLPerf logs into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rec = make_records(
        n=n,
        scenario=scenario,
        latency_ms=latency_ms,
        jitter=jitter,
        seed=seed,
        qps=qps,
        tokens=tokens,
        failures=failures,
    )
    np.savez(folder / "records.npz", status_reasons=np.array(reasons), **rec)
    responses = responses if responses is not None else ["Hello there."] * 3
    accuracy = [
        {"seq_id": i, "qsl_idx": i, "data": text.encode().hex()}
        for i, text in enumerate(responses)
    ]
    (folder / "mlperf_log_accuracy.json").write_text(json.dumps(accuracy))
    (folder / "mlperf_log_summary.txt").write_text("Result is : VALID\n")
    (folder / "mlperf_log_detail.txt").write_text(":::MLLOG {}\n")
    valid = not verdict_reasons
    run = {
        "schema_version": 1,
        "run_id": run_id or f"20261126T0300{seed:02d}Z_{benchmark}_{scenario}",
        "infermeter_version": "0.1.0",
        "started_at": f"2026-11-26T03:00:{seed % 60:02d}+00:00",
        "finished_at": "2026-11-26T03:01:00+00:00",
        "benchmark": benchmark,
        "scenario": scenario,
        "mode": "PerformanceOnly",
        "engine": {"name": "native", "version": "0.1.0"},
        "sut": {
            "kind": sut_kind,
            "name": sut_name,
            "params": sut_params if sut_params is not None else {"note": sut_name},
        },
        "dataset": {"name": "synthetic", "total_sample_count": 1024},
        "settings": {"requested": {}, "effective": {}},
        "verdict": {
            "result": "VALID" if valid else "INVALID",
            "valid": valid,
            "reasons": list(verdict_reasons),
        },
        "metrics": _metrics(rec, tokens, qps),
        "environment": {
            "host": "testhost",
            "platform": "Linux",
            "python": "3.11.7",
            "cpu": "AMD EPYC",
            "cpu_count": 2,
            "gpu": gpu,
            "packages": {"numpy": np.__version__},
        },
        "files": [
            "mlperf_log_summary.txt",
            "mlperf_log_detail.txt",
            "mlperf_log_accuracy.json",
            "records.npz",
        ],
    }
    (folder / "run.json").write_text(json.dumps(run, indent=2))
    return folder
