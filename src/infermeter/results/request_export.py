"""A run's samples one row each, as JSONL, CSV or Parquet (``results export --requests``).

What AIPerf's and GuideLLM's per-request exports give: every sample's times
(from run start: scheduled, issued, first token, completed), its TTFT, TPOT and
latency (MLPerf's, counted from the scheduled time), output tokens, and its
status with the failure reason. Times are milliseconds; a time that never came
is null (JSON, Parquet) or empty (CSV).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError, MissingDependencyError
from infermeter.outfile import replacing
from infermeter.results.records import Records

REQUEST_FORMATS = ("jsonl", "csv", "parquet")

COLUMNS = (
    "sample",
    "query_index",
    "sample_index",
    "status",
    "reason",
    "scheduled_ms",
    "issued_ms",
    "first_token_ms",
    "completed_ms",
    "ttft_ms",
    "tpot_ms",
    "latency_ms",
    "output_tokens",
)


def request_format(out: Path | None, fmt: str | None) -> str:
    """The format asked (``--format``), else ``out``'s suffix, else JSONL."""
    suffix = out.suffix.lstrip(".").lower() if out is not None else ""
    chosen = (fmt or (suffix if suffix in REQUEST_FORMATS else "") or "jsonl").lower()
    if chosen not in REQUEST_FORMATS:
        raise ConfigError(
            f"--requests exports as {', '.join(REQUEST_FORMATS)}, not {chosen!r}; "
            "pass --format jsonl|csv|parquet."
        )
    return chosen


def request_columns(rec: Records) -> dict[str, list[Any]]:
    """One list per column of ``COLUMNS``, a row per issued sample."""
    n = rec.status.shape[0]
    ok = rec.ok
    failed = rec.status > 0
    first = ok & (rec.first_token_ns >= 0)
    reasons = ("", *rec.status_reasons)
    status = np.where(ok, "ok", np.where(failed, "failed", "not completed"))
    span = (rec.completed_ns - rec.first_token_ns).astype(np.float64)
    tpot = span / np.maximum(rec.n_tokens - 1, 1)
    return {
        "sample": list(range(n)),
        "query_index": rec.query_index.tolist(),
        "sample_index": rec.sample_index.tolist(),
        "status": status.tolist(),
        "reason": [
            reasons[k] if k < len(reasons) else f"status {k}"
            for k in rec.status.tolist()
        ],
        "scheduled_ms": _ms(rec.scheduled_ns, rec.scheduled_ns >= 0),
        "issued_ms": _ms(rec.issued_ns, rec.issued_ns >= 0),
        "first_token_ms": _ms(rec.first_token_ns, rec.first_token_ns >= 0),
        "completed_ms": _ms(rec.completed_ns, rec.completed_ns >= 0),
        "ttft_ms": _ms(rec.first_token_ns - rec.scheduled_ns, first),
        "tpot_ms": _ms(tpot, first & (rec.n_tokens > 1)),
        "latency_ms": _ms(rec.completed_ns - rec.scheduled_ns, ok),
        "output_tokens": rec.n_tokens.tolist(),
    }


def export_requests(rec: Records, path: Path, fmt: str) -> int:
    """Write ``rec``'s samples to ``path`` as ``fmt``; the number of rows."""
    columns = request_columns(rec)
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise MissingDependencyError("pyarrow", "parquet") from None
    rows = zip(*columns.values(), strict=True)
    with replacing(path) as tmp:
        if fmt == "parquet":
            pq.write_table(pa.table(columns), tmp)
        elif fmt == "csv":
            with tmp.open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(COLUMNS)
                writer.writerows(rows)
        else:
            with tmp.open("w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(dict(zip(COLUMNS, row, strict=True))))
                    handle.write("\n")
    return len(columns["sample"])


def _ms(ns: npt.NDArray[Any], valid: npt.NDArray[np.bool_]) -> list[float | None]:
    values: list[float | None] = np.round(ns / 1e6, 6).tolist()
    for i in np.flatnonzero(~valid).tolist():
        values[i] = None
    return values
