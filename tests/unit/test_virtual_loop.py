"""run_virtual: timers cost no wall time, times are exact, a deadlock is an error."""

from __future__ import annotations

import asyncio
import time

import pytest

from infermeter.testing.virtual_loop import run_virtual


def test_sleeps_and_timeouts_jump_the_clock_exactly() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        seen: list[float] = []

        async def sleeper(s: float) -> None:
            await asyncio.sleep(s)
            seen.append(loop.time())

        await asyncio.gather(sleeper(3600.0), sleeper(0.5), sleeper(12.25))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.sleep(100.0), 7.0)
        seen.append(loop.time())
        return seen

    start = time.monotonic()
    assert run_virtual(main()) == [0.5, 12.25, 3600.0, 3607.0]
    assert time.monotonic() - start < 5.0  # an hour of virtual time, no wall time


def test_every_task_waiting_on_nothing_is_an_error() -> None:
    async def stuck() -> None:
        await asyncio.Event().wait()

    with pytest.raises(RuntimeError, match="no timer is due"):
        run_virtual(stuck())
