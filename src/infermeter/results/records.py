"""The per-sample records of a run folder: records.npz, or the journal of a killed run.

One row per issued sample, times in ns from run start (-1 = never). A damaged
file is one ``StoreError`` line.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import StoreError
from infermeter.loadgen.journal import read_journal

RECORD_ARRAYS = (
    "scheduled_ns",
    "issued_ns",
    "first_token_ns",
    "completed_ns",
    "sample_index",
    "query_index",
    "n_tokens",
    "status",
)

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Records:
    """One row per issued sample; times in ns from run start, -1 = never."""

    scheduled_ns: I64
    issued_ns: I64
    first_token_ns: I64
    completed_ns: I64
    sample_index: I64
    query_index: I64
    n_tokens: I64
    status: npt.NDArray[np.uint8]
    status_reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> npt.NDArray[np.bool_]:
        """Samples that completed without error."""
        ok: npt.NDArray[np.bool_] = (self.status == 0) & (self.completed_ns >= 0)
        return ok

    def latency_ns(self) -> I64:
        """Latency of successful samples, counted from the scheduled time (MLPerf)."""
        ok = self.ok
        return (self.completed_ns[ok] - self.scheduled_ns[ok]).astype(np.int64)

    def ttft_ns(self) -> I64:
        """Time to first token of successful samples that reported one."""
        ok = self.ok & (self.first_token_ns >= 0)
        return (self.first_token_ns[ok] - self.scheduled_ns[ok]).astype(np.int64)

    def tpot_ns(self) -> npt.NDArray[np.float64]:
        """Time per output token after the first (samples with two or more tokens)."""
        ok = self.ok & (self.first_token_ns >= 0) & (self.n_tokens > 1)
        span = (self.completed_ns[ok] - self.first_token_ns[ok]).astype(np.float64)
        return span / (self.n_tokens[ok] - 1)


def read_records(path: Path) -> Records:
    """Load records.npz, turning a damaged file into one StoreError line."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: np.asarray(npz[name]) for name in npz.files}
    except FileNotFoundError:
        raise StoreError(f"{str(path)!r} not found; restore it or rerun.") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise StoreError(f"{str(path)!r} is unreadable ({exc}); rerun.") from None
    missing = [name for name in RECORD_ARRAYS if name not in arrays]
    if missing:
        raise StoreError(f"{str(path)!r} lacks arrays {', '.join(missing)}.")
    return _records_of(arrays)


def read_journal_records(path: Path) -> Records:
    """The records a killed run streamed to its journal."""
    try:
        arrays = read_journal(path)
    except FileNotFoundError:
        return no_records()
    except (OSError, ValueError) as exc:
        raise StoreError(f"{str(path)!r} is unreadable ({exc}).") from None
    return _records_of(arrays)


def _records_of(arrays: dict[str, Any]) -> Records:
    reasons = tuple(str(r) for r in arrays.get("status_reasons", np.array([], str)))
    return Records(
        **{name: arrays[name].astype(np.int64) for name in RECORD_ARRAYS[:-1]},
        status=arrays["status"].astype(np.uint8),
        status_reasons=reasons,
    )


def no_records() -> Records:
    empty = np.zeros(0, dtype=np.int64)
    return Records(*(empty,) * 7, status=np.zeros(0, dtype=np.uint8))
