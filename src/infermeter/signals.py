"""Signals in the child processes of a run (HTTP workers, the simulated endpoint).

Ctrl-C in a terminal reaches every process of its group. A run's children
ignore it: the parent stops issuing, waits for requests in flight (the grace
period), then closes its children itself, so none dies with work in hand.
"""

from __future__ import annotations

import signal


def ignore_interrupts() -> None:
    """Call first thing in a child process that the run's parent stops and closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
