"""The bridge between the official per-sample API and the batch-native engine.

Issue: a ``QueryBatch`` becomes ``list[QuerySample]`` for the user's callback.
Completion: ``QuerySamplesComplete`` stamps the time on entry, keeps the ids (and
the bytes the accuracy log needs) and hands many calls to the engine's sink as
one array call. Calls made inside the issue callback are handed over when it
returns; calls from other threads are handed over at once, group-commit style.
"""

from __future__ import annotations

import inspect
import itertools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from threading import get_ident
from typing import Any

import numpy as np

from infermeter.compat.lg_types import QuerySample, QuerySampleResponse
from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch

# Response ids of one phase are base + engine id, base = generation * ID_SPACE + 1:
# never 0, and ids of an earlier phase fall outside the current one.
ID_SPACE = 1 << 36
COMPLETE, FIRST_TOKEN = 0, 1
IssueCallback = Callable[[list[QuerySample]], Any]
FastIssueCallback = Callable[[list[int], list[int]], Any]
ResponseCallback = Callable[[QuerySampleResponse], Any]


class LoadGenUsageError(ConfigError):
    """The harness called the LoadGen API wrongly (the official wheel often crashes here)."""


@dataclass
class PySut:
    """What ConstructSUT / ConstructFastSUT / ConstructQDL registered."""

    issue: Callable[..., Any]
    flush: Callable[[], Any]
    fast: bool
    name: str


@dataclass
class PyQsl:
    """What ConstructQSL registered."""

    total_sample_count: int
    performance_sample_count: int
    load: Callable[[list[int]], Any]
    unload: Callable[[list[int]], Any]


class Handles:
    """Opaque int handles (never 0, never reused) to registered objects."""

    def __init__(self) -> None:
        self._objects: dict[int, object] = {}
        self._destroyed: set[int] = set()
        self._next = itertools.count(0x5EED_0000_1000, 0x40)
        self._lock = threading.Lock()

    def add(self, obj: object) -> int:
        with self._lock:
            handle = next(self._next)
            self._objects[handle] = obj
        return handle

    def get(self, handle: int, kind: type[Any], what: str, call: str) -> Any:
        obj = self._objects.get(handle)
        if isinstance(obj, kind):
            return obj
        if handle in self._destroyed:
            raise LoadGenUsageError(
                f"{call}: the {what} handle {handle} was already destroyed; "
                f"construct a new one and pass that"
            )
        raise LoadGenUsageError(
            f"{call}: {handle!r} is not a {what} handle; pass what "
            f"Construct{'QSL' if what == 'QSL' else 'SUT'}() returned"
        )

    def destroy(self, handle: int, kind: type[Any], what: str, call: str) -> None:
        self.get(handle, kind, what, call)
        with self._lock:
            del self._objects[handle]
            self._destroyed.add(handle)


class QslAdapter:
    """The engine's QuerySampleLibrary over a Python QSL's callbacks."""

    name = "PyQSL"

    def __init__(self, qsl: PyQsl) -> None:
        self._qsl = qsl
        self.total_sample_count = qsl.total_sample_count
        self.performance_sample_count = qsl.performance_sample_count

    def load_samples(self, indices: np.ndarray[Any, Any]) -> None:
        self._qsl.load(indices.tolist())

    def unload_samples(self, indices: np.ndarray[Any, Any]) -> None:
        self._qsl.unload(indices.tolist())


class SutAdapter:
    """The engine's SystemUnderTest over a Python SUT's callbacks.

    Server without coalescing calls the callback once per query, as LoadGen
    does; every other case once per engine batch (all samples due at once).
    """

    def __init__(self, sut: PySut, router: Router, *, per_query: bool) -> None:
        self._sut = sut
        self._router = router
        self._per_query = per_query
        self.name = sut.name

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        router = self._router
        base = router.begin_issue(sink)
        try:
            ids = (batch.ids + base).tolist()
            indices = batch.sample_indices.tolist()
            issue = self._sut.issue
            if self._sut.fast:
                if self._per_query:
                    for i, x in zip(ids, indices, strict=True):
                        issue([i], [x])
                else:
                    issue(ids, indices)
            elif self._per_query:
                for i, x in zip(ids, indices, strict=True):
                    issue([QuerySample(i, x)])
            else:
                issue(list(map(QuerySample, ids, indices)))
        finally:
            router.end_issue()

    def flush_queries(self) -> None:
        self._sut.flush()


class Router:
    """Routes ``QuerySamplesComplete`` / ``FirstTokenComplete`` to the current phase's sink."""

    def __init__(self, now: Callable[[], int], *, token_run: bool) -> None:
        self._now = now
        self._token_run = token_run
        self._pending: deque[tuple[Any, ...]] = deque()
        self._flush_lock = threading.Lock()
        self._issuing: int | None = None  # thread id inside the issue callback
        self._generation = 0
        self._sink: CompletionSink | None = None
        self._stamped = False
        self.base = 1
        self.wants = "none"  # "all" | "none" | "some": which responses the log keeps
        self.sampled = False  # performance phases sample the accuracy log

    # -- phases -------------------------------------------------------------------
    def on_phase(self, label: str) -> None:
        self.wants = (
            "all"
            if label.startswith("accuracy")
            else ("some" if self.sampled else "none")
        )

    def begin_issue(self, sink: CompletionSink) -> int:
        if sink is not self._sink:
            self._drain()
            self._generation += 1
            self.base = self._generation * ID_SPACE + 1
            self._sink = sink
            params = inspect.signature(sink.complete).parameters
            self._stamped = "at_ns" in params
        self._issuing = get_ident()
        return self.base

    def end_issue(self) -> None:
        self._issuing = None
        self._drain()

    def close(self) -> None:
        self._drain()
        self._sink = None

    # -- the official calls -----------------------------------------------------------
    # Both are on the hot path (once per query in Server): no helper calls when
    # nothing is logged, one tuple appended, handed over in bulk later.
    def complete(
        self,
        responses: Sequence[QuerySampleResponse],
        response_cb: ResponseCallback | None = None,
    ) -> None:
        now = self._now()
        try:
            ids = [r.id for r in responses]
            n_tokens = [r.n_tokens for r in responses] if self._token_run else None
        except AttributeError:
            raise _not_responses(COMPLETE, responses) from None
        data = (
            None
            if self.wants == "none"
            else self._payloads(ids, responses, response_cb, COMPLETE)
        )
        self._pending.append((COMPLETE, ids, now, n_tokens, data))
        if get_ident() != self._issuing:
            self._drain()

    def first_token(
        self,
        responses: Sequence[QuerySampleResponse],
        response_cb: ResponseCallback | None = None,
    ) -> None:
        now = self._now()
        try:
            ids = [r.id for r in responses]
        except AttributeError:
            raise _not_responses(FIRST_TOKEN, responses) from None
        data = (
            None
            if self.wants == "none" or not self._token_run
            else self._payloads(ids, responses, response_cb, FIRST_TOKEN)
        )
        self._pending.append((FIRST_TOKEN, ids, now, None, data))
        if get_ident() != self._issuing:
            self._drain()

    def _payloads(
        self,
        ids: list[int],
        responses: Sequence[QuerySampleResponse],
        response_cb: ResponseCallback | None,
        kind: int,
    ) -> list[bytes] | None:
        """The bytes the accuracy log keeps, copied before the call returns."""
        if self.wants == "all":
            wanted = [True] * len(ids)
        else:
            assert self._sink is not None
            engine_ids = np.asarray(ids, dtype=np.int64) - self.base
            inside = (engine_ids >= 0) & (engine_ids < ID_SPACE)
            wanted = [False] * len(ids)
            if inside.any():
                mask = np.zeros(len(ids), dtype=np.bool_)
                mask[inside] = self._sink.wants_data(engine_ids[inside])
                wanted = mask.tolist()
        out = []
        for r, want in zip(responses, wanted, strict=True):
            if want and response_cb is not None:
                response_cb(r)
            out.append(r.payload() if want else b"")
        return out

    # -- handing over to the sink ---------------------------------------------------------
    def _drain(self) -> None:
        while self._pending:
            if not self._flush_lock.acquire(blocking=False):
                return  # the holder re-checks after releasing
            try:
                self._flush()
            finally:
                self._flush_lock.release()

    def _flush(self) -> None:
        pending = self._pending
        events = [pending.popleft() for _ in range(len(pending))]
        sink = self._sink
        if sink is None:
            raise LoadGenUsageError(
                f"{len(events)} completion calls arrived before the first issue "
                "callback; complete only ids LoadGen issued"
            )
        if not self._stamped:
            for event in events:
                self._hand_over_one(sink, event)
        elif all(e[0] == COMPLETE for e in events):
            self._hand_over(sink, COMPLETE, events)
        else:
            for kind, group in itertools.groupby(events, key=lambda e: e[0]):
                self._hand_over(sink, kind, list(group))

    def _hand_over(
        self, sink: CompletionSink, kind: int, events: list[tuple[Any, ...]]
    ) -> None:
        """One array call for many official calls, each id with its call's time."""
        ids = np.array([i for e in events for i in e[1]], dtype=np.int64)
        if len(events) > 1 and _repeats(ids):
            # An id in two calls is a double completion, not "twice in one call".
            for event in events:
                self._hand_over(sink, kind, [event])
            return
        ids -= self.base
        at = np.array([e[2] for e in events for _ in e[1]], dtype=np.int64)
        data = _joined(events, 4)
        if kind == FIRST_TOKEN:
            sink.first_token(ids, data, at_ns=at)
            return
        n_tokens = (
            np.array([n for e in events for n in e[3]], dtype=np.int64)
            if self._token_run
            else None
        )
        sink.complete(ids, n_tokens=n_tokens, data=data, at_ns=at)

    def _hand_over_one(self, sink: CompletionSink, event: tuple[Any, ...]) -> None:
        """Without ``at_ns`` on the sink: one call per official call (slower)."""
        ids = np.asarray(event[1], dtype=np.int64) - self.base
        if event[0] == FIRST_TOKEN:
            sink.first_token(ids, event[4])
        else:
            n_tokens = None if event[3] is None else np.asarray(event[3], np.int64)
            sink.complete(ids, n_tokens=n_tokens, data=event[4])


_CALL_NAMES = {COMPLETE: "QuerySamplesComplete", FIRST_TOKEN: "FirstTokenComplete"}


def _not_responses(kind: int, responses: object) -> TypeError:
    first = next(iter(responses), None) if isinstance(responses, Sequence) else None
    return TypeError(
        f"{_CALL_NAMES[kind]} takes a list of QuerySampleResponse "
        f"(got {type(responses).__name__} of {type(first).__name__})"
    )


def _repeats(ids: np.ndarray[Any, Any]) -> bool:
    if ids.shape[0] < 2 or bool(np.all(ids[1:] > ids[:-1])):
        return False
    return int(np.unique(ids).shape[0]) != int(ids.shape[0])


def _joined(events: list[tuple[Any, ...]], slot: int) -> list[bytes] | None:
    if all(e[slot] is None for e in events):
        return None
    out: list[bytes] = []
    for e in events:
        out.extend(e[slot] if e[slot] is not None else [b""] * len(e[1]))
    return out
