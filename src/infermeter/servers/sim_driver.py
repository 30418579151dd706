"""Runs the live simulator in real time on an event loop and tells requests their times.

Simulated time is ``(monotonic now - start) * time_scale``. Each replica step
runs when its start time comes (a timer on the loop), so a later arrival slows
the requests already in flight exactly as in the batch simulator. A step's
first tokens and completions resolve per-request futures with their simulated
times, one step ahead of them: the HTTP handler sleeps until each time.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from infermeter.errors import ConfigError
from infermeter.perfmodel.live import LiveSimulator

NS_PER_S = 1_000_000_000


class TimeBase:
    """Simulated nanoseconds since start, ``time_scale`` times faster than real time."""

    def __init__(self, time_scale: float = 1.0) -> None:
        if not time_scale > 0:
            raise ConfigError(f"--time-scale must be > 0 (got {time_scale:g}).")
        self.scale = time_scale
        self._t0 = time.monotonic_ns()

    def now_ns(self) -> int:
        return int((time.monotonic_ns() - self._t0) * self.scale)

    def delay_s(self, sim_ns: int) -> float:
        """Real seconds from now until simulated time ``sim_ns`` (<= 0: past)."""
        return (sim_ns - self.now_ns()) / self.scale / NS_PER_S

    async def sleep_until(self, sim_ns: int) -> None:
        # Loop timers can fire up to a millisecond early (uvloop rounds to ms);
        # never send before the simulated time.
        while (delay := self.delay_s(sim_ns)) > 0:
            await asyncio.sleep(delay)


@dataclass(slots=True)
class Waiter:
    """One request's simulated first-token and completion times, once known."""

    rid: int
    osl: int
    first: asyncio.Future[int]
    done: asyncio.Future[int]


@dataclass(slots=True)
class DriverStats:
    requests: int = 0
    completed: int = 0
    tokens: int = 0
    steps: int = 0
    late_steps: int = 0
    max_step_lateness_ns: int = 0


class SimDriver:
    """Owns the live simulator; every method runs on the loop's thread."""

    def __init__(
        self, sim: LiveSimulator, clock: TimeBase, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.sim, self.clock, self.loop = sim, clock, loop
        self.stats = DriverStats()
        self._waiters: dict[int, Waiter] = {}
        self._timer: asyncio.TimerHandle | None = None

    def submit(self, isl: int, osl: int, blocks: tuple[int, ...] = ()) -> Waiter:
        """Add a request arriving now; ``ConfigError`` when it can never fit.

        ``blocks``: the prompt's chained block hashes (for the prefix cache).
        """
        self._tick()  # run the steps due before this arrival first
        rid = self.sim.add(self.clock.now_ns(), isl, osl, blocks)
        waiter = Waiter(rid, osl, self.loop.create_future(), self.loop.create_future())
        self._waiters[rid] = waiter
        self.stats.requests += 1
        self._tick()  # an idle replica starts its step at the arrival
        return waiter

    def tokens_made(self, rid: int) -> int:
        return self.sim.tokens_made(rid)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for waiter in self._waiters.values():
            for fut in (waiter.first, waiter.done):
                if not fut.done():
                    fut.cancel()
        self._waiters.clear()

    def _tick(self) -> None:
        now = self.clock.now_ns()
        due = self.sim.next_event_ns()
        if due is not None and now - due > 1_000_000:
            # Ran over 1 ms late (a busy loop); the simulated times stay exact,
            # a delivery is late only when this exceeds the step's own length.
            self.stats.late_steps += 1
            self.stats.max_step_lateness_ns = max(
                self.stats.max_step_lateness_ns, now - due
            )
        for events in self.sim.advance(now):
            self.stats.steps += 1
            self._resolve(events.first_token.tolist(), events.end_ns, first=True)
            self._resolve(events.completed.tolist(), events.end_ns, first=False)
        self._schedule()

    def _resolve(self, rids: list[int], end_ns: int, *, first: bool) -> None:
        for rid in rids:
            waiter = self._waiters.get(rid)
            if waiter is None:
                continue
            fut = waiter.first if first else waiter.done
            if not fut.done():
                fut.set_result(end_ns)
            if not first:
                del self._waiters[rid]
                self.stats.completed += 1
                self.stats.tokens += waiter.osl

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        nxt = self.sim.next_event_ns()
        if nxt is None:
            return
        self._timer = self.loop.call_later(
            max(0.0, self.clock.delay_s(nxt)), self._tick
        )
