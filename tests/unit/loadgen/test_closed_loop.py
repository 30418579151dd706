"""The closed loop run by the SUT (``ClosedLoopFeed``): the engine's rules, in virtual time.

Every test runs the same fake twice where it can, once drawing from the feed
and once issued to by the engine's thread, and compares counts, orders and
virtual times: the feed must not change a figure.
"""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.errors import SUTError
from infermeter.loadgen.closed_loop import ClosedLoopFeed, ClosedLoopSUT
from infermeter.loadgen.engine import IssuePolicy, PhaseResult, run_phase
from infermeter.loadgen.interfaces import (
    CompletionSink,
    IdArray,
    IndexArray,
    QueryBatch,
)
from infermeter.loadgen.runner import RunOutcome, run_test
from infermeter.loadgen.schedule import Schedule
from infermeter.loadgen.settings import RunSettings, Scenario
from infermeter.loadgen.stop import StopSignal
from infermeter.runs.load import LoadSpec, run_load
from infermeter.suts.fake import FakeSUT
from infermeter.testing import InMemoryQSL, ManualClock

MS = 1_000_000


class LoopFake(FakeSUT):
    """A FakeSUT that runs the closed loop itself when ``drive`` (pumps on completion)."""

    def __init__(
        self, clock: ManualClock, *, drive: bool = True, extra: int = 0, **kw: object
    ) -> None:
        super().__init__(clock, **kw)  # type: ignore[arg-type]
        self.drive = drive
        self.extra = extra
        self.feed: ClosedLoopFeed | None = None
        self.batches: list[QueryBatch] = []
        self.in_flight = 0
        self.peak = 0
        self.drove = 0
        self.stop_after: tuple[int, StopSignal] | None = None
        self.done = 0

    def drive_closed_loop(self, feed: ClosedLoopFeed) -> bool:
        if not self.drive:
            return False
        self.drove += 1
        self.feed = feed
        feed.pump(self._launch, self.extra)
        return True

    def _launch(self, batch: QueryBatch) -> None:
        assert self.feed is not None
        self.issue_query(batch, self.feed.sink)

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self.batches.append(batch)
        self.in_flight += len(batch)
        self.peak = max(self.peak, self.in_flight)
        super().issue_query(batch, sink)

    def _finish(self, ids: IdArray, indices: IndexArray, sink: CompletionSink) -> None:
        self.in_flight -= len(ids)
        self.done += len(ids)
        super()._finish(ids, indices, sink)
        if self.stop_after is not None and self.done == self.stop_after[0]:
            self.stop_after[1].stop("stopped by the test")
        if self.drive and self.feed is not None:
            self.feed.pump(self._launch, self.extra)


def settings(scenario: Scenario, **changes: object) -> RunSettings:
    base = RunSettings(
        scenario=scenario,
        min_duration_ms=200,
        min_query_count=50,
        single_stream_expected_latency_ns=2 * MS,
        multi_stream_expected_latency_ns=2 * MS,
    )
    return base.copy(**changes)


def both(
    scenario: Scenario, latency_ns: int = 3 * MS, **changes: object
) -> tuple[RunOutcome, RunOutcome, LoopFake, LoopFake]:
    """One MLPerf test with the SUT's loop and one with the engine's, same fake."""
    out = []
    for drive in (True, False):
        clock = ManualClock()
        sut = LoopFake(clock, drive=drive, latency_ns=latency_ns, jitter=0.3, seed=7)
        outcome = run_test(
            sut, InMemoryQSL(64), settings(scenario, **changes), clock=clock
        )
        out.append((outcome, sut))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def same_phase(a: PhaseResult, b: PhaseResult) -> None:
    n = a.samples_issued
    assert n == b.samples_issued and a.queries_issued == b.queries_issued
    assert np.array_equal(a.schedule.sample_indices, b.schedule.sample_indices)
    for name in ("issued_ns", "completed_ns"):
        got = getattr(a.records, name)[:n] - a.start_ns
        want = getattr(b.records, name)[:n] - b.start_ns
        assert np.array_equal(got, want), name
    assert np.array_equal(
        a.query_origin_ns[: a.queries_issued] - a.start_ns,
        b.query_origin_ns[: b.queries_issued] - b.start_ns,
    )
    assert a.errors == b.errors
    assert a.ran_out_of_queries == b.ran_out_of_queries


@pytest.mark.parametrize("scenario", [Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM])
def test_the_sut_loop_gives_the_engine_loops_records_in_single_and_multi_stream(
    scenario: Scenario,
) -> None:
    fed, engine, fed_sut, engine_sut = both(scenario, min_query_count=120)
    assert fed_sut.drove >= 1 and engine_sut.drove == 0
    assert fed.performance is not None and engine.performance is not None
    same_phase(fed.performance, engine.performance)
    assert fed.summary is not None and engine.summary is not None
    assert fed.summary.query_count == engine.summary.query_count
    assert fed.summary.final_issued_s == engine.summary.final_issued_s
    assert fed.summary.valid == engine.summary.valid
    # One query at a time: the next only after the previous completed.
    assert fed_sut.peak == engine_sut.peak == fed.performance.schedule.samples_per_query
    order = np.concatenate(
        [b.ids for b in fed_sut.batches[: fed.performance.samples_issued]]
    )
    assert order.tolist() == sorted(order.tolist())


def test_single_stream_runs_out_of_queries_the_same_way() -> None:
    # A quarter of the expected latency: the schedule runs out before 200 ms.
    fed, engine, _, _ = both(Scenario.SINGLE_STREAM, latency_ns=MS // 2)
    assert fed.performance is not None and engine.performance is not None
    same_phase(fed.performance, engine.performance)
    assert fed.performance.ran_out_of_queries


def test_max_query_count_ends_the_fed_loop_with_loadgens_text() -> None:
    fed, engine, _, _ = both(
        Scenario.SINGLE_STREAM, max_query_count=60, min_duration_ms=5000
    )
    assert fed.performance is not None and engine.performance is not None
    same_phase(fed.performance, engine.performance)
    assert fed.performance.queries_issued == 60
    assert any("Max query count reached" in e for e in fed.performance.errors)


def test_fixed_concurrency_keeps_k_in_flight_and_issues_every_sample_in_order() -> None:
    clock = ManualClock()
    sut = LoopFake(clock, latency_ns=2 * MS, jitter=0.5, seed=3)
    result = run_load(
        sut, LoadSpec(concurrency=8, requests=300), sample_count=50, clock=clock
    )
    phase = result.phase
    assert sut.drove == 1 and sut.peak == 8
    assert phase.samples_issued == 300 and result.metrics.completed == 300
    ids = np.concatenate([b.ids for b in sut.batches]).tolist()
    assert ids == list(range(300))
    # Each query's latency origin is its issue time, taken as a slot freed.
    n = phase.samples_issued
    assert np.array_equal(phase.query_origin_ns[:n], phase.records.issued_ns[:n])
    started = np.sort(phase.records.issued_ns[:n])
    ended = np.sort(phase.records.completed_ns[:n])
    # The (k+1)-th query goes out exactly when the first one completes.
    assert np.array_equal(started[8:], ended[:-8])


def test_extra_lets_a_remote_sut_hold_more_but_never_where_the_count_is_a_rule() -> (
    None
):
    clock = ManualClock()
    sut = LoopFake(clock, extra=3, latency_ns=2 * MS)
    run_load(sut, LoadSpec(concurrency=4, requests=100), sample_count=10, clock=clock)
    assert sut.peak == 7
    clock = ManualClock()
    single = LoopFake(clock, extra=3, latency_ns=3 * MS)
    run_test(single, InMemoryQSL(64), settings(Scenario.SINGLE_STREAM), clock=clock)
    assert single.drove == 1 and single.peak == 1


@pytest.mark.parametrize("drive", [True, False])
def test_max_duration_ends_a_fixed_concurrency_run_at_the_same_query(
    drive: bool,
) -> None:
    clock = ManualClock()
    sut = LoopFake(clock, drive=drive, latency_ns=2 * MS)
    result = run_load(
        sut, LoadSpec(concurrency=4, duration_s=0.1), sample_count=10, clock=clock
    )
    # 4 slots, 2 ms each, 100 ms: 50 rounds of 4, the next round is past the limit.
    assert result.phase.samples_issued == 200
    assert any("Max test duration reached" in e for e in result.phase.errors)


def test_a_stop_ends_the_fed_loop_and_names_what_was_in_flight() -> None:
    clock = ManualClock()
    stop = StopSignal()
    sut = LoopFake(clock, latency_ns=2 * MS)
    sut.stop_after = (40, stop)
    phase = _phase_with_stop(sut, clock, stop)
    assert phase.stopped_at_ns is not None
    # Issuing ended at the stop: the 40 done and at most the 4 slots refilled.
    assert 40 <= phase.samples_issued <= 44
    assert phase.stop_reason is not None and "stopped by the test" in phase.stop_reason


def _phase_with_stop(
    sut: LoopFake, clock: ManualClock, stop: StopSignal
) -> PhaseResult:
    from infermeter.runs import load

    spec = LoadSpec(concurrency=4, requests=1000)
    times, _ = load._times(spec)
    schedule = Schedule(
        scheduled_ns=times,
        sample_indices=np.arange(times.shape[0], dtype=np.int64) % 10,
        samples_per_query=1,
        query_offsets=None,
        generated_duration_ns=0,
    )
    return run_phase(
        sut,
        schedule,
        load._settings(spec, 10),
        clock,
        policy=IssuePolicy(closed_loop=True, max_in_flight=4),
        stop=stop,
    )


def test_a_sut_that_stops_answering_times_out_instead_of_hanging() -> None:
    clock = ManualClock()
    sut = LoopFake(clock, latency_ns=2 * MS, hang_after=10)
    spec = LoadSpec(concurrency=4, requests=100, completion_timeout_s=5.0)
    result = run_load(sut, spec, sample_count=10, clock=clock)
    assert result.phase.timed_out
    assert result.phase.samples_issued == 14  # 10 answered, 4 slots refilled
    assert any("stopped answering" in e for e in result.phase.errors)


def test_a_launch_that_raises_is_the_runs_crash() -> None:
    class Broken(LoopFake):
        def _launch(self, batch: QueryBatch) -> None:
            raise RuntimeError("cannot send")

    clock = ManualClock()
    with pytest.raises(SUTError, match="cannot send"):
        run_load(
            Broken(clock),
            LoadSpec(concurrency=2, requests=10),
            sample_count=4,
            clock=clock,
        )


def test_the_engine_keeps_the_loop_when_the_policy_or_the_sut_says_so() -> None:
    clock = ManualClock()
    declining = LoopFake(clock, drive=False)
    assert isinstance(declining, ClosedLoopSUT)
    run_load(
        declining, LoadSpec(concurrency=2, requests=20), sample_count=4, clock=clock
    )
    assert declining.drove == 0 and len(declining.batches) == 20
