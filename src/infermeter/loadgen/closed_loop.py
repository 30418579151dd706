"""The engine's closed loop, run on the SUT's own thread: no hop per request.

In a closed loop the next query goes out when one completes. Run by the
engine's issue thread, every completion crosses from the SUT's thread to
the engine thread and the next query crosses back: two thread hops and GIL
hand-offs per request. A SUT that can run the loop itself (``ClosedLoopSUT``)
gets a ``ClosedLoopFeed`` instead and calls ``pump`` on its own thread, once
at the start and after every completion. ``pump`` applies the engine's own
rules (the sample order, max query count and duration, the SingleStream /
MultiStream stop once both minimums are met, a stop signal), stamps the issue
time and hands the due queries to ``launch`` on the calling thread. The
engine thread only watches: timeouts, stops, aborts, the end.

``extra`` lets a SUT that hands queries on to remote clients hold a few more
than ``max_in_flight`` (the clients keep to ``max_in_flight`` and send each
one when a slot frees, stamping its real issue time with ``mark_issued``); it
is refused where the count of queries itself is a rule (``stop_on_min``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock
from infermeter.loadgen.interfaces import CompletionSink, IdArray, QueryBatch, Stamps
from infermeter.loadgen.records import Sink

Launch = Callable[[QueryBatch], None]


class FeedHost(Protocol):
    """What the feed needs of the engine's phase (``engine._PhaseRunner``)."""

    sink: Sink
    clock: Clock
    origin: npt.NDArray[np.int64]
    ran_out: bool

    def limits_hit(self, q: int, now: int) -> bool: ...

    def batch(self, q0: int, q1: int, now: int) -> QueryBatch: ...


class Feed(Protocol):
    """What a SUT's own loop draws from: the engine's feed, or a remote client's slice."""

    @property
    def ended(self) -> bool: ...

    @property
    def sink(self) -> CompletionSink: ...

    def pump(self, launch: Launch, extra: int = 0) -> None: ...


@runtime_checkable
class ClosedLoopSUT(Protocol):
    """A SUT that can run the engine's closed loop on its own thread."""

    def drive_closed_loop(self, feed: ClosedLoopFeed) -> bool:
        """Take the loop (True): call ``feed.pump`` now and after every completion.

        False leaves the loop to the engine's issue thread (``issue_query``).
        """
        ...


@dataclass(frozen=True, slots=True)
class LoopRules:
    """The closed loop's rules, from the engine's schedule, settings and policy."""

    query_count: int
    samples_per_query: int
    max_in_flight: int  # queries
    stop_on_min: bool  # SingleStream / MultiStream: end once both minimums are met
    min_query_count: int
    min_duration_ns: int


class ClosedLoopFeed:
    """The closed loop's next queries, for the SUT to draw on its own thread."""

    def __init__(self, host: FeedHost, rules: LoopRules, start_ns: int) -> None:
        self._host = host
        self.rules = rules
        self._start = start_ns
        self._q = 0
        # Reentrant: a SUT may complete inside ``launch`` and pump again.
        self._lock = threading.RLock()
        self.ended = False
        self.error: Exception | None = None  # what ``launch`` raised: the run's crash

    @property
    def max_in_flight(self) -> int:
        return self.rules.max_in_flight

    @property
    def samples_per_query(self) -> int:
        return self.rules.samples_per_query

    @property
    def sink(self) -> Sink:
        """Where the SUT completes the samples it launched."""
        return self._host.sink

    @property
    def lock(self) -> threading.RLock:
        """Held while the feed issues; the engine takes it to end the feed."""
        return self._lock

    @property
    def allows_extra(self) -> bool:
        """Whether ``pump(extra=...)`` may hold more than ``max_in_flight``."""
        return not self.rules.stop_on_min

    def pump(self, launch: Launch, extra: int = 0) -> None:
        """Launch every query that fits below ``max_in_flight`` (+ ``extra``) now."""
        with self._lock:
            if self.ended:
                return
            q0 = self._q
            now = self._host.clock.now_ns()
            q1 = self._due(q0, now, extra if self.allows_extra else 0)
            if q1 > q0:
                self._q = q1
                try:
                    launch(self._host.batch(q0, q1, now))
                except Exception as exc:  # raised in the engine's thread
                    self.error = exc
                    self._end()

    def _due(self, q: int, now: int, extra: int) -> int:
        """How far the loop may go now; ends the feed when a rule says so."""
        host, rules = self._host, self.rules
        sink, spq = host.sink, rules.samples_per_query
        room = (rules.max_in_flight + extra) * spq - (sink.issued - sink.done)
        while room >= spq and q < rules.query_count:
            if host.limits_hit(q, now):
                self._end()
                return q
            q += 1
            room -= spq
            # LoadGen ends naturally once the query just issued meets both minimums.
            if (
                rules.stop_on_min
                and q >= rules.min_query_count
                and now - self._start >= rules.min_duration_ns
            ):
                self._end()
                return q
        if q >= rules.query_count:
            host.ran_out = rules.stop_on_min
            self._end()
        return q

    def mark_issued(self, ids: IdArray, at_ns: Stamps) -> None:
        """Queries held by remote clients really left at ``at_ns``: their issue
        time and latency origin (one sample per query: fixed concurrency)."""
        ids = np.asarray(ids, dtype=np.int64)
        self.sink.mark_issued(ids, at_ns)
        if self.rules.samples_per_query == 1:
            known = (ids >= 0) & (ids < self._q)
            at = at_ns if isinstance(at_ns, int) else np.asarray(at_ns)[known]
            self._host.origin[ids[known]] = at

    def end(self) -> None:
        """No more queries (the engine saw a stop, an abort or a timeout)."""
        with self._lock:
            self._end()

    def _end(self) -> None:
        if not self.ended:
            self.ended = True
            # Wakes the engine thread, which watches the phase meanwhile.
            self._host.sink.interrupt.set()
