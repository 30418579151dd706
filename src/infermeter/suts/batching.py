"""A worker pool that batches queued samples for local-compute SUTs.

``issue_query`` only enqueues (it runs on the engine's issue thread); workers
take up to ``max_batch`` queued samples at once, so Offline gets full batches,
Server gets dynamic batches of whatever is waiting, SingleStream batches of 1.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

import numpy as np

from infermeter.loadgen.interfaces import (
    CompletionSink,
    IdArray,
    IndexArray,
    QueryBatch,
)

Work = Callable[[IdArray, IndexArray, CompletionSink], None]


class BatchingPool:
    """Worker threads running ``work(ids, indices, sink)`` on batches of queued samples."""

    def __init__(self, work: Work, *, max_batch: int, workers: int, name: str) -> None:
        self._work = work
        self.max_batch = max(1, max_batch)
        self._queue: collections.deque[tuple[int, int, CompletionSink]] = (
            collections.deque()
        )
        self._cv = threading.Condition()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._loop, name=f"{name}-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, batch: QueryBatch, sink: CompletionSink) -> None:
        """Queue every sample of ``batch`` (returns at once)."""
        rows = zip(batch.ids.tolist(), batch.sample_indices.tolist(), strict=True)
        with self._cv:
            self._queue.extend((i, s, sink) for i, s in rows)
            self._cv.notify_all()

    def close(self) -> None:
        """Stop the workers once the queue is empty."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        for thread in self._threads:
            thread.join(timeout=5)

    def _take(self) -> list[tuple[int, int, CompletionSink]] | None:
        with self._cv:
            while not self._queue and not self._closed:
                self._cv.wait()
            if not self._queue:
                return None
            sink = self._queue[0][2]
            taken: list[tuple[int, int, CompletionSink]] = []
            # one batch never mixes sinks (i.e. run phases)
            while (
                self._queue
                and len(taken) < self.max_batch
                and self._queue[0][2] is sink
            ):
                taken.append(self._queue.popleft())
            return taken

    def _loop(self) -> None:
        while (taken := self._take()) is not None:
            ids = np.asarray([t[0] for t in taken], dtype=np.int64)
            indices = np.asarray([t[1] for t in taken], dtype=np.int64)
            sink = taken[0][2]
            try:
                self._work(ids, indices, sink)
            except Exception as exc:  # a failed batch is data, not a crash
                sink.fail(
                    ids,
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                )


class PooledSUT:
    """A SUT whose work runs on a ``BatchingPool``: issue enqueues, close stops."""

    name = "PooledSUT"
    pool: BatchingPool

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self.pool.submit(batch, sink)

    def flush_queries(self) -> None:
        """Nothing to flush: the workers drain the queue on their own."""

    def close(self) -> None:
        self.pool.close()
