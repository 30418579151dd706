"""``RecordingSink``: a CompletionSink that keeps every call, for testing SUT adapters alone."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.interfaces import IdArray, ResponseData, Stamps


@dataclass
class RecordingSink:
    """Records first tokens, completions and failures by id; thread-safe."""

    log_all: bool = True
    first_tokens: dict[int, bytes | None] = field(default_factory=dict)
    completed: dict[int, tuple[int | None, bytes | None]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    expected: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def first_token(
        self,
        ids: IdArray,
        data: Sequence[ResponseData] | None = None,
        *,
        at_ns: Stamps | None = None,
    ) -> None:
        with self._lock:
            for k, i in enumerate(np.asarray(ids).tolist()):
                self.first_tokens[i] = bytes(data[k]) if data is not None else None

    def complete(
        self,
        ids: IdArray,
        *,
        n_tokens: npt.NDArray[np.int64] | int | None = None,
        data: Sequence[ResponseData] | None = None,
        at_ns: Stamps | None = None,
    ) -> None:
        with self._lock:
            for k, i in enumerate(np.asarray(ids).tolist()):
                tokens = None
                if n_tokens is not None:
                    tokens = n_tokens if isinstance(n_tokens, int) else int(n_tokens[k])
                self.completed[i] = (
                    tokens,
                    bytes(data[k]) if data is not None else None,
                )
            self._check_done()

    def fail(self, ids: IdArray, reason: str) -> None:
        with self._lock:
            for i in np.asarray(ids).tolist():
                self.failed[i] = reason
            self._check_done()

    def wants_data(self, ids: IdArray) -> npt.NDArray[np.bool_]:
        return np.full(np.asarray(ids).shape[0], self.log_all, dtype=np.bool_)

    def wait(self, expected: int, timeout_s: float = 10.0) -> bool:
        """Wait until ``expected`` samples have completed or failed."""
        with self._lock:
            self.expected = expected
            self._check_done()
        return self.done.wait(timeout_s)

    def _check_done(self) -> None:
        if self.expected and len(self.completed) + len(self.failed) >= self.expected:
            self.done.set()
