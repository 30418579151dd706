"""The CompletionSink of ``--engine mlcommons``: answers the official LoadGen, keeps records.

LoadGen's ids are opaque; each issued id gets a row (issue, first-token and
completion times, tokens, status) so the run folder has the same
``records.npz`` as a native run. Response buffers live until each call returns.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock
from infermeter.loadgen.interfaces import IdArray, ResponseData, Stamps

UNSET = -1


class OfficialSink:
    """Forwards to ``lg.QuerySamplesComplete`` / ``lg.FirstTokenComplete``; thread-safe."""

    def __init__(self, lg: ModuleType, *, log_all: bool, clock: Clock) -> None:
        self._lg = lg
        self._log_all = log_all
        self._clock = clock
        self._lock = threading.Lock()
        self._rows: dict[int, int] = {}
        self.queries = 0
        self.issued: list[int] = []
        self.first_token_at: list[int] = []
        self.completed_at: list[int] = []
        self.sample_index: list[int] = []
        self.query_index: list[int] = []
        self.n_tokens: list[int] = []
        self.status: list[int] = []
        self.reasons: list[str] = []
        self.failures: Counter[str] = Counter()

    # -- bookkeeping ------------------------------------------------------------------
    def issue(self, ids: list[int], indices: list[int], now: int) -> None:
        """Rows for the samples of one issue call (one LoadGen query or a coalesced set)."""
        n = len(ids)
        with self._lock:
            first = len(self.issued)
            self._rows.update(zip(ids, range(first, first + n), strict=True))
            self.issued += [now] * n
            self.first_token_at += [UNSET] * n
            self.completed_at += [UNSET] * n
            self.sample_index += indices
            self.query_index += [self.queries] * n
            self.n_tokens += [0] * n
            self.status += [0] * n
            self.queries += 1

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """The records.npz arrays, times in ns since the first issue (-1 = never)."""
        with self._lock:
            issued = np.asarray(self.issued, dtype=np.int64)
            start = int(issued[0]) if issued.shape[0] else 0

            def rel(values: list[int]) -> npt.NDArray[np.int64]:
                a = np.asarray(values, dtype=np.int64)
                return np.where(a < 0, UNSET, a - start)

            return {
                "scheduled_ns": rel(
                    self.issued
                ),  # LoadGen keeps its schedule to itself
                "issued_ns": rel(self.issued),
                "first_token_ns": rel(self.first_token_at),
                "completed_ns": rel(self.completed_at),
                "sample_index": np.asarray(self.sample_index, dtype=np.int64),
                "query_index": np.asarray(self.query_index, dtype=np.int64),
                "n_tokens": np.asarray(self.n_tokens, dtype=np.int64),
                "status": np.asarray(self.status, dtype=np.uint8),
                "status_reasons": np.asarray(self.reasons, dtype=str),
            }

    @property
    def completed(self) -> int:
        return sum(
            1
            for t, s in zip(self.completed_at, self.status, strict=True)
            if t >= 0 and not s
        )

    def _mark(self, ids: list[int], column: list[int], now: int) -> list[int]:
        rows = [self._rows.get(i, UNSET) for i in ids]
        for row in rows:
            if row >= 0 and column[row] == UNSET:
                column[row] = now
        return rows

    # -- CompletionSink ---------------------------------------------------------------
    def first_token(
        self,
        ids: IdArray,
        data: Sequence[ResponseData] | None = None,
        *,
        at_ns: Stamps | None = None,  # the official LoadGen stamps its own times
    ) -> None:
        now = self._clock.now_ns()
        id_list = np.asarray(ids).tolist()
        with self._lock:
            self._mark(id_list, self.first_token_at, now)
        keep, responses = self._responses(id_list, data, None)
        self._lg.FirstTokenComplete(responses)
        del keep

    def complete(
        self,
        ids: IdArray,
        *,
        n_tokens: npt.NDArray[np.int64] | int | None = None,
        data: Sequence[ResponseData] | None = None,
        at_ns: Stamps | None = None,  # the official LoadGen stamps its own times
    ) -> None:
        now = self._clock.now_ns()
        id_list = np.asarray(ids).tolist()
        counts = _per_id(n_tokens, len(id_list))
        with self._lock:
            rows = self._mark(id_list, self.completed_at, now)
            for row, count in zip(rows, counts or [], strict=False):
                if row >= 0:
                    self.n_tokens[row] = count
        keep, responses = self._responses(id_list, data, counts)
        self._lg.QuerySamplesComplete(responses)
        del keep

    def fail(self, ids: IdArray, reason: str) -> None:
        # LoadGen has no failure call: complete with no data, remember why here.
        now = self._clock.now_ns()
        id_list = np.asarray(ids).tolist()
        with self._lock:
            if reason not in self.reasons:
                self.reasons.append(reason)
            code = self.reasons.index(reason) + 1
            for row in self._mark(id_list, self.completed_at, now):
                if row >= 0:
                    self.status[row] = min(code, 255)
            self.failures[reason] += len(id_list)
        keep, responses = self._responses(id_list, None, None)
        self._lg.QuerySamplesComplete(responses)
        del keep

    def wants_data(self, ids: IdArray) -> npt.NDArray[np.bool_]:
        return np.full(np.asarray(ids).shape[0], self._log_all, dtype=np.bool_)

    def _responses(
        self,
        ids: list[int],
        data: Sequence[ResponseData] | None,
        n_tokens: list[int] | None,
    ) -> tuple[list[Any], list[Any]]:
        response = self._lg.QuerySampleResponse
        keep: list[Any] = []
        out = []
        for k, sample_id in enumerate(ids):
            address, size = 0, 0
            if data is not None and k < len(data) and len(data[k]):
                buffer = np.frombuffer(bytes(data[k]), dtype=np.uint8)
                keep.append(buffer)
                address, size = buffer.ctypes.data, buffer.shape[0]
            if n_tokens is None:
                out.append(response(sample_id, address, size))
            else:
                out.append(response(sample_id, address, size, n_tokens[k]))
        return keep, out


def _per_id(n_tokens: npt.NDArray[np.int64] | int | None, n: int) -> list[int] | None:
    if n_tokens is None:
        return None
    if isinstance(n_tokens, int):
        return [n_tokens] * n
    return [int(v) for v in np.asarray(n_tokens).tolist()]
