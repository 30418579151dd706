"""Online simulator (for serve-sim) and the simulated SUT in virtual time."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import QueryBatch
from infermeter.perfmodel.online import OnlineSimulator
from infermeter.suts.simulated import SimulatedSUT
from infermeter.testing.clock import ManualClock
from infermeter.testing.sink import RecordingSink


def test_online_timings_grow_with_load_and_are_ordered() -> None:
    sim = OnlineSimulator.for_system("h100-sxm", 2, "llama2-70b", precision="fp8", tp=2)
    alone = sim.submit(0, 500, 100)
    assert 0 < alone.first_token_ns < alone.completed_ns
    tokens = alone.token_ns
    assert tokens.shape == (100,) and np.all(np.diff(tokens) >= 0)
    assert tokens[-1] == alone.completed_ns
    # 200 requests at the same moment share the replica: the last one waits longer.
    last = [sim.submit(10**9, 500, 100) for _ in range(200)][-1]
    assert last.completed_ns - 10**9 > alone.completed_ns
    assert sim.in_flight == 201
    with pytest.raises(ConfigError, match="arrival order"):
        sim.submit(0, 10, 10)


def test_simulated_sut_completes_through_the_clock() -> None:
    clock = ManualClock(start_ns=0)
    sut = SimulatedSUT(
        clock, accelerator="h200", count=1, model="llama2-70b", samples=64
    )
    sink = RecordingSink()
    n = 16
    batch = QueryBatch(
        ids=np.arange(n, dtype=np.int64),
        sample_indices=np.arange(n, dtype=np.int64),
        scheduled_ns=np.arange(n, dtype=np.int64) * 10_000_000,
    )
    sut.issue_query(batch, sink)
    assert not sink.completed  # nothing happens until virtual time moves
    clock.advance(3_600 * 10**9)
    assert set(sink.first_tokens) == set(range(n))
    assert [sink.completed[i][0] for i in range(n)] == [
        sut.lengths(i)[1] for i in range(n)
    ]
    assert "simulated" in sut.name
