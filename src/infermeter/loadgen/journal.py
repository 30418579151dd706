"""The records journal: completed samples streamed to disk while a run goes.

A process killed mid-run (``kill -9``, out of memory, power) leaves
``records.journal`` beside the provisional run.json: every sample completed
up to the last flush (at most ``FLUSH_S`` before the end). The finished run
replaces it with ``records.npz``.

Format (append-only): the line ``infermeter-journal 1``, then frames. A frame
is one JSON line ``{"phase": k, "origin_ns": t0, "rows": n, "reasons": [...],
"columns": [[name, dtype], ...]}`` (``t0``: the phase start on the engine
clock) followed by the ``n`` values of each column as raw
little-endian bytes, column after column. Times are ns from the phase start,
as in records.npz. A frame cut short by the kill is ignored on reading.

The writer is a thread of its own that takes the sink's lock only to copy
the rows that completed since its last look, so the issue thread never waits
on the disk.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.engine import LivePhase
from infermeter.loadgen.records import UNSET

MAGIC = b"infermeter-journal 1\n"
FLUSH_S = 0.5
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "<i8"),
    ("scheduled_ns", "<i8"),
    ("issued_ns", "<i8"),
    ("first_token_ns", "<i8"),
    ("completed_ns", "<i8"),
    ("sample_index", "<i8"),
    ("query_index", "<i8"),
    ("n_tokens", "<i8"),
    ("status", "|u1"),
)
I64 = npt.NDArray[np.int64]


class RecordJournal:
    """A ``PhaseWatcher`` that appends each phase's completed samples to ``path``."""

    def __init__(self, path: Path, *, flush_s: float = FLUSH_S) -> None:
        self.path = path
        self.flush_s = flush_s
        self._file: BinaryIO | None = None
        self._phase: LivePhase | None = None
        self._number = -1
        self._pending = np.zeros(0, dtype=np.int64)  # issued, not yet complete
        self._seen = 0  # ids below this were issued at the last look
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.rows_written = 0

    # -- PhaseWatcher ------------------------------------------------------------
    def phase_started(self, phase: LivePhase) -> None:
        if self._file is None:
            self._file = self.path.open("ab")
            if self._file.tell() == 0:
                self._file.write(MAGIC)
                self._file.flush()
        self._phase, self._number = phase, self._number + 1
        self._pending, self._seen = np.zeros(0, dtype=np.int64), 0
        self._done.clear()
        self._thread = threading.Thread(
            target=self._loop, name="infermeter-journal", daemon=True
        )
        self._thread.start()

    def phase_ended(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        self._write_new()  # whatever completed since the last look

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    # -- writing -----------------------------------------------------------------
    def _loop(self) -> None:
        while not self._done.wait(self.flush_s):
            self._write_new()

    def _write_new(self) -> None:
        phase = self._phase
        if phase is None or self._file is None:
            return
        snapshot = self._snapshot(phase)
        if snapshot is None:
            return
        columns = self._columns(phase, *snapshot)
        if columns[0].shape[0]:
            self._write_frame(columns, list(phase.records.status_reasons))

    def _snapshot(
        self, phase: LivePhase
    ) -> tuple[I64, dict[str, npt.NDArray[Any]]] | None:
        """Copies of the rows to look at, taken under the sink's lock (a consistent
        view); the samples issued since the last look are contiguous, so they are
        sliced (a memory copy), and only the few still in flight are gathered."""
        rec = phase.records
        names = ["issued_ns", "completed_ns", "status"]
        if rec.has_tokens:
            names += ["first_token_ns", "n_tokens"]
        with phase.sink.lock:
            issued = phase.sink.issued
            if issued == 0:
                return None
            lo, pending = self._seen, self._pending
            rows = {
                name: np.concatenate(
                    (getattr(rec, name)[pending], getattr(rec, name)[lo:issued])
                )
                for name in names
            }
        ids = np.concatenate((pending, np.arange(lo, issued, dtype=np.int64)))
        self._seen = issued
        return ids, rows

    def _columns(
        self, phase: LivePhase, ids: I64, rows: dict[str, npt.NDArray[Any]]
    ) -> list[npt.NDArray[Any]]:
        """The journal's columns for the rows of ``ids`` that completed."""
        done = rows["completed_ns"] != UNSET
        self._pending = ids[~done]
        if not done.all():
            rows = {name: values[done] for name, values in rows.items()}
            ids = ids[done]
        start = phase.start
        query = _query_of(phase, ids)
        none = np.full(ids.size, -1, dtype=np.int64)

        def rel(values: I64) -> I64:
            return np.where(values < 0, -1, values - start)

        return [
            ids,
            phase.origin[query] - start,
            rel(rows["issued_ns"]),
            rel(rows["first_token_ns"]) if "first_token_ns" in rows else none,
            rows["completed_ns"] - start,
            phase.schedule.sample_indices[ids],
            query,
            rows["n_tokens"] if "n_tokens" in rows else np.zeros(ids.size, np.int64),
            rows["status"],
        ]

    def _write_frame(self, columns: list[npt.NDArray[Any]], reasons: list[str]) -> None:
        assert self._file is not None and self._phase is not None
        n = int(columns[0].shape[0])
        header = {
            "phase": self._number,
            "origin_ns": self._phase.start,
            "rows": n,
            "reasons": reasons,
            "columns": [list(c) for c in COLUMNS],
        }
        self._file.write(json.dumps(header).encode() + b"\n")
        for (_, dtype), values in zip(COLUMNS, columns, strict=True):
            # A buffer view, no extra copy; the write itself releases the GIL.
            self._file.write(np.ascontiguousarray(values, dtype=dtype).data)
        self._file.flush()  # to the OS: a killed process loses nothing flushed
        self.rows_written += n


def _query_of(phase: LivePhase, ids: I64) -> I64:
    schedule = phase.schedule
    if schedule.query_offsets is not None:
        found = np.searchsorted(schedule.query_offsets, ids, side="right") - 1
        return np.asarray(found, dtype=np.int64)
    if schedule.samples_per_query == 1:
        return ids
    return ids // schedule.samples_per_query


def read_journal(path: Path) -> dict[str, npt.NDArray[Any]]:
    """The last phase's rows, sorted by id, as records.npz arrays (``status_reasons`` too).

    A frame cut short (the writer was killed mid-write) and anything after it
    are ignored; a file that is not a journal raises ``ValueError``.
    """
    data = path.read_bytes()
    if MAGIC.startswith(data):  # killed before the first frame
        return _empty()
    if not data.startswith(MAGIC):
        raise ValueError(f"{path} is not an infermeter records journal")
    frames: dict[int, list[dict[str, npt.NDArray[Any]]]] = {}
    reasons: dict[int, list[str]] = {}
    at = len(MAGIC)
    while at < len(data):
        frame = _frame_at(data, at)
        if frame is None:
            break
        header, arrays, at = frame
        phase = int(header["phase"])
        frames.setdefault(phase, []).append(arrays)
        reasons[phase] = [str(r) for r in header.get("reasons", [])]
    if not frames:
        return _empty()
    last = max(frames)
    merged = {
        name: np.concatenate([f[name] for f in frames[last]]) for name, _ in COLUMNS
    }
    order = np.argsort(merged.pop("id"), kind="stable")
    out: dict[str, npt.NDArray[Any]] = {k: v[order] for k, v in merged.items()}
    out["status_reasons"] = np.asarray(reasons[last], dtype=str)
    return out


def _frame_at(
    data: bytes, at: int
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]], int] | None:
    end = data.find(b"\n", at)
    if end < 0:
        return None
    try:
        header = json.loads(data[at:end])
        n = int(header["rows"])
        # Only the known layout is read: a header never chooses a dtype.
        if [tuple(c) for c in header["columns"]] != list(COLUMNS) or n < 0:
            return None
    except (ValueError, KeyError, TypeError):
        return None
    at = end + 1
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name, dtype in COLUMNS:
        size = n * np.dtype(dtype).itemsize
        if at + size > len(data):
            return None
        values = np.frombuffer(data, dtype=dtype, count=n, offset=at)
        arrays[name] = values.astype(np.uint8 if name == "status" else np.int64)
        at += size
    return header, arrays, at


def _empty() -> dict[str, npt.NDArray[Any]]:
    out: dict[str, npt.NDArray[Any]] = {
        name: np.zeros(0, dtype=np.uint8 if name == "status" else np.int64)
        for name, _ in COLUMNS
        if name != "id"
    }
    out["status_reasons"] = np.zeros(0, dtype=str)
    return out
