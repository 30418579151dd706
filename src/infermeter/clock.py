"""Clocks: the engine reads time only through a Clock, so tests can use virtual time.

``MonotonicClock`` is real time (``time.perf_counter_ns``) with a hybrid
sleep (sleep, then spin for the last tens of microseconds). ``ManualClock``
lives in ``infermeter.testing``: time jumps to the next deadline, so scenario
tests run in milliseconds.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol

# Below this much time to go, spin instead of sleeping: OS wake-ups are
# late by 50-100 us, which would show up as issue lateness.
SPIN_NS = 60_000


class Clock(Protocol):
    """Time as the engine sees it: integer nanoseconds from an arbitrary origin."""

    def now_ns(self) -> int:
        """Current time in ns."""
        ...

    def sleep_until(self, deadline_ns: int) -> None:
        """Return at or just after ``deadline_ns``."""
        ...

    def wait_for(self, event: threading.Event, deadline_ns: int) -> bool:
        """Wait until ``event`` is set or ``deadline_ns`` passes; return ``event.is_set()``."""
        ...

    def call_at(self, deadline_ns: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` at ``deadline_ns`` (on some thread); used by fake SUTs."""
        ...


class MonotonicClock:
    """Real time from ``time.perf_counter_ns`` with a sleep-then-spin wait."""

    def __init__(self) -> None:
        self._timers: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    def sleep_until(self, deadline_ns: int) -> None:
        remaining = deadline_ns - time.perf_counter_ns()
        if remaining > SPIN_NS:
            time.sleep((remaining - SPIN_NS) / 1e9)
        while time.perf_counter_ns() < deadline_ns:
            pass

    def wait_for(self, event: threading.Event, deadline_ns: int) -> bool:
        remaining = deadline_ns - time.perf_counter_ns()
        if remaining <= 0:
            return event.is_set()
        return event.wait(remaining / 1e9)

    def call_at(self, deadline_ns: int, fn: Callable[[], None]) -> None:
        with self._cond:
            heapq.heappush(self._timers, (deadline_ns, next(self._seq), fn))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run_timers, name="infermeter-timers", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run_timers(self) -> None:
        while True:
            with self._cond:
                while not self._timers:
                    self._cond.wait()
                deadline, _, fn = self._timers[0]
                remaining = deadline - time.perf_counter_ns()
                if remaining > 0:
                    self._cond.wait(remaining / 1e9)
                    continue
                heapq.heappop(self._timers)
            fn()
