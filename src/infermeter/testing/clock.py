"""``ManualClock``: virtual time that jumps to the next deadline, for millisecond scenario tests."""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable


class ManualClock:
    """A Clock whose time only moves when someone sleeps or waits.

    Timers registered with ``call_at`` run, in deadline order, on the thread
    that sleeps or waits past them. Use it with SUTs that complete through
    ``call_at`` (``FakeSUT``), never with SUTs that use real threads.
    """

    def __init__(self, start_ns: int = 1_000_000_000) -> None:
        self._now = start_ns
        self._timers: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def now_ns(self) -> int:
        return self._now

    def advance(self, delta_ns: int) -> None:
        self.sleep_until(self._now + delta_ns)

    def sleep_until(self, deadline_ns: int) -> None:
        self._run_timers_until(deadline_ns)
        self._now = max(self._now, deadline_ns)

    def wait_for(self, event: threading.Event, deadline_ns: int) -> bool:
        while not event.is_set() and self._timers and self._timers[0][0] <= deadline_ns:
            self._run_next()
        if not event.is_set():
            self._now = max(self._now, deadline_ns)
        return event.is_set()

    def call_at(self, deadline_ns: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (deadline_ns, next(self._seq), fn))

    def _run_timers_until(self, deadline_ns: int) -> None:
        while self._timers and self._timers[0][0] <= deadline_ns:
            self._run_next()

    def _run_next(self) -> None:
        deadline, _, fn = heapq.heappop(self._timers)
        self._now = max(self._now, deadline)
        fn()
