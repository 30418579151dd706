"""Is the endpoint still there? And failure reasons that group.

``Reachability`` watches connection failures: when every request over the
last ``window`` seconds failed to connect, it calls ``on_unreachable`` once
with the reason (the run layer then ends the run INVALID). A request that got
any HTTP answer counts as reaching the endpoint.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import aiohttp

from infermeter.clock import Clock
from infermeter.suts.lean_wire import ConnectFailed

TOP_REASONS = 20
# Ids differ per response and would keep identical failures apart:
# UUIDs, prefixed ids (chatcmpl-..., req_...), long hex and long numbers.
_IDS = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b[A-Za-z]+[-_](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}\b"
    r"|\b[0-9a-fA-F]{16,}\b"
    r"|\b\d{6,}\b",
)


def mask_ids(text: str) -> str:
    """``text`` with per-request ids replaced by ``<id>``."""
    return _IDS.sub("<id>", text)


def top_reasons(failures: Counter[str], limit: int = TOP_REASONS) -> dict[str, int]:
    """The most common reasons; the rest summed as ``other reasons`` so counts add up."""
    top = dict(failures.most_common(limit))
    rest = sum(failures.values()) - sum(top.values())
    if rest:
        top[f"other reasons ({len(failures) - len(top)} kinds)"] = rest
    return top


def is_connect_failure(exc: BaseException) -> bool:
    """True when the request never reached the server (refused, no route, DNS, timeout)."""
    timeout = getattr(aiohttp, "ConnectionTimeoutError", None)
    if timeout is not None and isinstance(exc, timeout):
        return True
    return isinstance(exc, aiohttp.ClientConnectorError | ConnectFailed)


class Reachability:
    """Connection failures since the last request that reached the endpoint."""

    def __init__(self, window_s: float, clock: Clock) -> None:
        self.window_ns = int(window_s * 1e9)
        self._clock = clock
        self._streak_start: int | None = None
        self._fired = False
        self.reached_any = False
        self.connect_failures = 0
        self.on_unreachable: Callable[[str], None] | None = None

    def reached(self) -> None:
        """A request got an HTTP answer."""
        self._streak_start = None
        self.reached_any = True

    def failed(self, exc: BaseException) -> None:
        """A request failed; connection failures may end the run."""
        if not is_connect_failure(exc):
            return
        self.connect_failures += 1
        now = self._clock.now_ns()
        if self._streak_start is None:
            self._streak_start = now
            return
        span = now - self._streak_start
        if self.window_ns and span >= self.window_ns and not self._fired:
            self._fired = True
            if self.on_unreachable is not None:
                self.on_unreachable(
                    f"The endpoint was unreachable: every request for {span / 1e9:.0f} s "
                    f"failed to connect ({exc.__class__.__name__}); the run was ended."
                )
