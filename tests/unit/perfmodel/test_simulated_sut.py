"""The simulated SUT in virtual time: the live simulator stepping on the engine clock."""

from __future__ import annotations

import numpy as np

from infermeter.loadgen.interfaces import QueryBatch
from infermeter.suts.simulated import SimulatedSUT
from infermeter.testing.clock import ManualClock
from infermeter.testing.sink import RecordingSink


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


def test_simulated_server_run_goes_through_the_engine() -> None:
    from infermeter.loadgen.runner import run_test
    from infermeter.loadgen.settings import RunSettings, Scenario
    from infermeter.testing import InMemoryQSL

    clock = ManualClock(start_ns=0)
    sut = SimulatedSUT(clock, accelerator="h100-sxm", count=8, model="llama2-70b")
    run = RunSettings(
        scenario=Scenario.SERVER,
        server_target_qps=20.0,
        min_duration_ms=5_000,
        min_query_count=100,
        use_token_latencies=True,
        ttft_latency=2_000_000_000,
        tpot_latency=200_000_000,
    )
    outcome = run_test(sut, InMemoryQSL(128), run, clock=clock)
    summary = outcome.summary
    assert summary is not None
    assert summary.samples_failed == summary.samples_missing == 0
    assert summary.ttft is not None and summary.tpot is not None
    # 20 QPS is a light load for 8x H100: well inside Llama 2 70B's limits.
    assert summary.ttft.percentiles[0.99] < 2_000_000_000
    assert summary.tpot.percentiles[0.99] < 200_000_000
