"""Metrics of a run whose process died, from the samples its journal kept.

The formulas are LoadGen's (percentile = ``sorted[floor(n * p)]``, latency
from the scheduled time), applied to whatever completed before the end. They
describe a partial run: no verdict is derived from them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.results.records import Records

PERCENTILES = (0.50, 0.90, 0.95, 0.97, 0.99, 0.999)


def recovered_metrics(records: Records, scenario: str) -> dict[str, Any]:
    """run.json-shaped ``metrics`` of the rows a killed run kept."""
    ok = records.ok
    n = int(ok.sum())
    last_s = float(records.completed_ns.max()) / 1e9 if records.completed_ns.size else 0
    metrics: dict[str, Any] = {
        "recovered_from": "records.journal",
        "samples_completed": n,
        "samples_failed": int(records.completed_ns.size - n),
        "duration_s": last_s,
        "samples_per_second": _rate(n - 1 if scenario == "Server" else n, last_s),
        "latency_ns": _stats(records.latency_ns()),
    }
    tokens = records.n_tokens[ok]
    if records.first_token_ns[ok].size and (records.first_token_ns[ok] >= 0).any():
        metrics["ttft_ns"] = _stats(records.ttft_ns())
        metrics["tpot_ns"] = _stats(records.tpot_ns().astype(np.int64))
    if tokens.size and tokens.sum() > 0:
        metrics["token_count"] = int(tokens.sum())
        metrics["tokens_per_second"] = _rate(int(tokens.sum()), last_s)
    return {k: v for k, v in metrics.items() if v is not None}


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 and count > 0 else 0.0


def _stats(values: npt.NDArray[np.int64]) -> dict[str, int] | None:
    if values.size == 0:
        return None
    ordered = np.sort(values)
    n = int(ordered.size)
    out = {
        "min": int(ordered[0]),
        "max": int(ordered[-1]),
        "mean": int(int(ordered.sum()) // n),
    }
    for p in PERCENTILES:
        out[f"p{p * 100:g}"] = int(ordered[min(n - 1, int(n * p))])
    return out
