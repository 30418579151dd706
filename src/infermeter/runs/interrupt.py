"""Ctrl-C and SIGTERM during a run: stop issuing, keep what was measured, say where it is.

The first signal asks the engine to stop (``StopSignal``): no new query is
issued and in-flight samples get the grace period; the run error reads
"interrupted by SIGINT after 612 s" (seconds since the command began). The
second skips the grace period. A third acts as the signal normally does (the handlers are
back to what they were), so a run stuck in writing can still be killed.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

from infermeter.loadgen.stop import StopSignal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_code(reason: str | None) -> int | None:
    """The shell's exit status for a run stopped by ``reason`` ('SIGINT' -> 130)."""
    if reason is None:
        return None
    try:
        return 128 + int(signal.Signals[reason])
    except KeyError:
        return 130


@contextlib.contextmanager
def stop_on_signals(stop: StopSignal) -> Iterator[StopSignal]:
    """Route SIGINT and SIGTERM to ``stop`` while the block runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield stop  # signals are only delivered to the main thread
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    began = time.monotonic()

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.requested:
            stop.abandon()
            restore()
            _say(f"{name} again: not waiting for requests in flight; writing the run")
            return
        elapsed = time.monotonic() - began
        stop.stop(f"interrupted by {name} after {elapsed:.0f} s", signal=name)
        wait = (
            "the completion timeout"
            if stop.grace_ns is None
            else (f"{stop.grace_ns / 1e9:g} s")
        )
        _say(
            f"{name}: stopping; waiting up to {wait} for requests in flight "
            f"({name} again to stop waiting)"
        )

    for sig in SIGNALS:
        signal.signal(sig, on_signal)
    try:
        yield stop
    finally:
        restore()


def _say(line: str) -> None:
    # A signal handler may run while the main thread writes: never let that fail.
    with contextlib.suppress(Exception):
        sys.stderr.write(f"\n{line}\n")
        sys.stderr.flush()
