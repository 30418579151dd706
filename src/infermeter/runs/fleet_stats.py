"""Per-replica figures of a fleet run: requests, TTFT and tokens/s per URL.

The HTTP SUT says which replica each sample went to (``routes()``); the
engine's records give the timings. TTFT counts from the scheduled time, as
every latency of the run does. These are infermeter results (unverified).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.engine import PhaseResult
from infermeter.loadgen.metrics import sample_origins
from infermeter.loadgen.records import STATUS_OK, UNSET

I64 = npt.NDArray[np.int64]
PERCENTILES = (50, 90, 99)


def fleet_block(
    sut: object, stats: dict[str, Any] | None, phase: PhaseResult | None
) -> dict[str, Any] | None:
    """run.json's ``fleet`` block, or None when the SUT is not a fleet."""
    fleet = (stats or {}).get("fleet")
    if not isinstance(fleet, dict):
        return None
    routes = getattr(sut, "routes", None)
    routed = routes() if callable(routes) else None
    if phase is None or routed is None:
        return fleet  # counts only (e.g. several client processes)
    ids, replicas = routed
    urls = [r["url"] for r in fleet["replicas"]]
    return {
        "routing": fleet["routing"],
        "replicas": replica_stats(phase, ids, replicas, urls),
    }


def replica_stats(
    phase: PhaseResult, ids: I64, replicas: I64, urls: list[str]
) -> list[dict[str, Any]]:
    """One dict per replica: requests, completed, failed, TTFT ms, tokens/s."""
    n = phase.samples_issued
    keep = (ids >= 0) & (ids < n)
    owner = np.full(n, -1, dtype=np.int64)
    owner[ids[keep]] = replicas[keep]
    rec = phase.records
    origin = sample_origins(phase)
    done = rec.completed_ns[:n]
    ok = (rec.status[:n] == STATUS_OK) & (done != UNSET)
    first = rec.first_token_ns[:n] if rec.has_tokens else np.full(n, UNSET)
    tokens = rec.tokens_of(n)
    end = int(done[done != UNSET].max()) if (done != UNSET).any() else phase.start_ns
    seconds = max(1, end - phase.start_ns) / 1e9
    out = []
    for k, url in enumerate(urls):
        mine = owner == k
        good = mine & ok
        with_first = good & (first != UNSET)
        ttft = (first[with_first] - origin[with_first]).astype(np.float64) / 1e6
        out.append(
            {
                "url": url,
                "requests": int(mine.sum()),
                "completed": int(good.sum()),
                "failed": int((mine & ~ok & (done != UNSET)).sum()),
                "ttft_ms": _percentiles(ttft),
                "tokens_per_second": round(float(tokens[good].sum()) / seconds, 3),
            }
        )
    return out


def _percentiles(values: npt.NDArray[np.float64]) -> dict[str, float]:
    if values.size == 0:
        return {}
    pct = np.percentile(values, PERCENTILES, method="higher")
    return {f"p{p}": round(float(v), 3) for p, v in zip(PERCENTILES, pct, strict=True)}
