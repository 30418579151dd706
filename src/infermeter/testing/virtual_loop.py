"""``run_virtual``: run a coroutine on an event loop whose clock jumps ahead.

When no callback is ready and no I/O is pending, the loop moves its clock to
the next timer instead of sleeping, so ``asyncio.sleep``, ``wait_for``
timeouts and ``call_later`` cost no wall time and every timestamp is exact.
For code that only waits on timers and on other tasks (no sockets).
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _JumpingSelector:
    """The loop's selector, polled without blocking; a wait becomes a jump."""

    def __init__(self, inner: selectors.BaseSelector, loop: VirtualTimeLoop) -> None:
        self._inner, self._loop = inner, loop

    def select(
        self, timeout: float | None = None
    ) -> list[tuple[selectors.SelectorKey, int]]:
        events = self._inner.select(0)
        if events:
            return events
        if timeout is None:
            raise RuntimeError("virtual loop: every task waits and no timer is due")
        self._loop.now += max(0.0, timeout)
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop on virtual time, starting at 0."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        inner: Any = self._selector  # type: ignore[has-type]
        self._selector = _JumpingSelector(inner, self)

    def time(self) -> float:
        return self.now


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh ``VirtualTimeLoop``."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
