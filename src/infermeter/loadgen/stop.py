"""Ending a test early and keeping what it measured (Ctrl-C, SIGTERM, an unreachable SUT).

``stop(reason)`` stops issuing: no new query leaves, the SUT is flushed, and
the engine waits for the samples in flight: up to ``grace_ns`` when set,
else as at a normal end (the completion timeout). ``abandon()`` ends that
wait at once (a second Ctrl-C). Either way the test ends normally: the
phase is judged INVALID with ``reason`` as a run error, and the run folder
is written with every sample that completed.

``stop`` and ``abandon`` only set attributes and ``threading.Event``s, so a
signal handler may call them.
"""

from __future__ import annotations

import threading

from infermeter.loadgen.settings import NS_PER_S

DEFAULT_GRACE_NS = 10 * NS_PER_S


class StopSignal:
    """Asks a running test to stop issuing (thread-safe; the first reason wins)."""

    def __init__(self, *, grace_ns: int | None = None) -> None:
        if grace_ns is not None and grace_ns < 0:
            raise ValueError(f"grace_ns must be >= 0 (got {grace_ns})")
        self.grace_ns = grace_ns  # None: in-flight samples get the completion timeout
        self.reason: str | None = (
            None  # logged as the run error, e.g. "interrupted by..."
        )
        self.signal: str | None = (
            None  # the OS signal that asked ("SIGINT"), if one did
        )
        self.abandoned = False  # stop waiting for in-flight samples
        self._event = threading.Event()
        # Reentrant: a signal handler may run while this thread holds it.
        self._lock = threading.RLock()
        self._wakes: list[threading.Event] = []

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    @property
    def event(self) -> threading.Event:
        """Set once a stop is requested (the issue loop sleeps on it)."""
        return self._event

    def stop(self, reason: str, *, signal: str | None = None) -> None:
        """Stop issuing; ``reason`` is the run error the phase logs."""
        with self._lock:
            if self.reason is None:
                self.reason, self.signal = reason, signal
        self._wake()

    def abandon(self) -> None:
        """Stop waiting for the samples in flight (they count as never completed)."""
        self.abandoned = True
        self._wake()

    def wake_with(self, event: threading.Event) -> None:
        """Also set ``event`` on stop and abandon (a waiter on it then sees them)."""
        with self._lock:
            self._wakes.append(event)

    def _wake(self) -> None:
        self._event.set()
        for wake in tuple(self._wakes):
            wake.set()
