"""Read ``mlperf_log_accuracy.json`` (ours or the official one), deduped on qsl_idx.

Format (spec section 5): a JSON array of ``{seq_id, qsl_idx, data}`` with
``data`` the response bytes as uppercase hex, plus ``token_count`` and (not
Offline) ``token_data`` on LLM runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import DatasetError, DatasetPathError

LOG_NAME = "mlperf_log_accuracy.json"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One logged response."""

    seq_id: int
    qsl_idx: int
    data: bytes
    token_count: int | None = None
    token_data: bytes | None = None

    def array(self, dtype: str) -> npt.NDArray[Any]:
        """The response bytes as a numpy array of ``dtype``."""
        return decode_array(self.data, dtype, self.qsl_idx)


def decode_array(data: bytes, dtype: str, qsl_idx: int) -> npt.NDArray[Any]:
    """``np.frombuffer`` with a one-line error when the size does not fit ``dtype``."""
    item = np.dtype(dtype).itemsize
    if len(data) % item:
        raise DatasetError(
            f"Response of sample {qsl_idx} has {len(data)} bytes, not a whole number "
            f"of {dtype} values; pass the right --dtype."
        )
    return np.frombuffer(data, dtype=dtype)


def read_accuracy_log(path: str | Path) -> list[LogEntry]:
    """Entries of an accuracy log, first response per ``qsl_idx``, in log order."""
    path = Path(path)
    if path.is_dir():
        path = path / LOG_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetPathError(
            f"Accuracy log {str(path)!r} not found; run with --mode AccuracyOnly first."
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(
            f"Accuracy log {str(path)!r} is not valid JSON ({exc})."
        ) from None
    if not isinstance(raw, list):
        raise DatasetError(f"Accuracy log {str(path)!r} is not a JSON array.")
    seen: set[int] = set()
    entries: list[LogEntry] = []
    for position, item in enumerate(raw):
        entry = _entry(item, position, path)
        if entry.qsl_idx not in seen:  # scripts keep the first response per sample
            seen.add(entry.qsl_idx)
            entries.append(entry)
    return entries


def _entry(item: Any, position: int, path: Path) -> LogEntry:
    try:
        token_data = item.get("token_data")
        count = item.get("token_count")
        return LogEntry(
            seq_id=int(item["seq_id"]),
            qsl_idx=int(item["qsl_idx"]),
            data=bytes.fromhex(item["data"]),
            token_count=None if count is None else int(count),
            token_data=None if token_data is None else bytes.fromhex(token_data),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise DatasetError(
            f"Accuracy log {str(path)!r} entry {position} is malformed; expected "
            '{"seq_id", "qsl_idx", "data": "<hex>"}.'
        ) from None
