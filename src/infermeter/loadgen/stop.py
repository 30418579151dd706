"""Stopping a test early and keeping what it measured (Ctrl-C, SIGTERM, a library call).

The first ``request`` stops issuing: no new query leaves, the SUT is flushed,
and the engine waits up to ``grace_ns`` for the samples in flight. A second
request (``abandoned``) ends that wait at once. Either way the test ends
normally: the phase is judged (INVALID, with the reason) and the run folder is
written with every sample that completed.

``request`` only sets attributes and ``threading.Event``s, so a signal handler
may call it.
"""

from __future__ import annotations

import threading

from infermeter.loadgen.settings import NS_PER_S

DEFAULT_GRACE_NS = 10 * NS_PER_S


class StopRequest:
    """Asks a running test to stop; hand one to ``run_test(stop=...)``."""

    def __init__(self, grace_ns: int = DEFAULT_GRACE_NS) -> None:
        if grace_ns < 0:
            raise ValueError(f"grace_ns must be >= 0 (got {grace_ns})")
        self.grace_ns = grace_ns
        self.reason: str | None = None  # what asked first, e.g. "SIGINT"
        self.abandoned = False  # a second request: stop waiting for in-flight samples
        self.event = threading.Event()  # set on every request
        self._wakers: list[threading.Event] = []

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str) -> None:
        """Stop issuing (first call) or stop waiting for in-flight samples (later calls)."""
        if self.reason is None:
            self.reason = reason
        else:
            self.abandoned = True
        self.event.set()
        for waker in tuple(self._wakers):
            waker.set()

    def watch(self, event: threading.Event) -> None:
        """Also set ``event`` on each request (the engine's wait for completions)."""
        self._wakers.append(event)

    def unwatch(self, event: threading.Event) -> None:
        if event in self._wakers:
            self._wakers.remove(event)
