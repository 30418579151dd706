"""The seams of the engine: what a SUT and a QSL implement, and the sink they complete through.

The engine owns these interfaces; adapters (``infermeter.suts``, datasets)
implement them. Everything crossing the seam is a numpy array, never one
Python object per sample, so a SUT can take a million queries a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

IdArray = npt.NDArray[np.int64]
"""Query/sample ids: the engine's sequence number of each issued sample."""
IndexArray = npt.NDArray[np.int64]
"""Sample indices into the QSL."""
NsArray = npt.NDArray[np.int64]
"""Times in integer nanoseconds on the engine clock."""

ResponseData = bytes | bytearray | memoryview
Stamps = int | npt.NDArray[np.int64]
"""One engine-clock time for a whole call, or one per id."""


@dataclass(frozen=True, slots=True)
class QueryBatch:
    """Samples due now: one row per sample, with its own scheduled time.

    ``ids`` are what the SUT hands back to the sink. ``scheduled_ns`` are
    absolute engine-clock times (latency counts from them); a batch may hold
    several MLPerf queries that fell due together (coalescing semantics).
    """

    ids: IdArray
    sample_indices: IndexArray
    scheduled_ns: NsArray

    def __len__(self) -> int:
        return int(self.ids.shape[0])


class CompletionSink(Protocol):
    """Where a SUT reports progress; thread-safe, handed in by the engine.

    The sink stamps times with the engine clock on entry, so a SUT never reads
    the time itself. Every issued id must be completed (or failed) exactly once.
    """

    def first_token(
        self,
        ids: IdArray,
        data: Sequence[ResponseData] | None = None,
        *,
        at_ns: Stamps | None = None,
    ) -> None:
        """The first token of each sample in ``ids`` arrived (LLM runs).

        ``at_ns``: when it arrived on the engine clock (one value or one per id),
        for callers that stamp times elsewhere (worker processes, queued calls);
        by default the sink stamps on entry.
        """
        ...

    def complete(
        self,
        ids: IdArray,
        *,
        n_tokens: npt.NDArray[np.int64] | int | None = None,
        data: Sequence[ResponseData] | None = None,
        at_ns: Stamps | None = None,
    ) -> None:
        """Samples finished; ``n_tokens`` for LLM runs; ``data`` for the accuracy log."""
        ...

    def fail(self, ids: IdArray, reason: str) -> None:
        """Samples failed (HTTP error, reset, timeout...); ``reason`` is one short line."""
        ...

    def wants_data(self, ids: IdArray) -> npt.NDArray[np.bool_]:
        """Which of ``ids`` will be written to the accuracy log (so need ``data``)."""
        ...


@runtime_checkable
class SystemUnderTest(Protocol):
    """A system under test: receives batches, completes through the sink.

    ``issue_query`` runs on the engine's issue thread and must return quickly:
    hand the work to your own threads, processes or event loop.
    """

    name: str

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        """Start work on ``batch``; complete each id through ``sink`` later (or now)."""
        ...

    def flush_queries(self) -> None:
        """No more queries will come in this run phase."""
        ...


@runtime_checkable
class QuerySampleLibrary(Protocol):
    """A dataset as LoadGen sees it: samples by index, loaded in sets."""

    name: str
    total_sample_count: int
    performance_sample_count: int

    def load_samples(self, indices: IndexArray) -> None:
        """Bring these samples into memory (untimed)."""
        ...

    def unload_samples(self, indices: IndexArray) -> None:
        """Release these samples (untimed)."""
        ...
