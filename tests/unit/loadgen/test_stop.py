"""A StopSignal ends a test early and keeps what it measured (virtual time)."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import Mode, RunSettings, Scenario
from infermeter.loadgen.stop import StopSignal
from infermeter.suts.fake import FakeSUT
from infermeter.testing import InMemoryQSL, ManualClock

MS = 1_000_000
S = 1_000 * MS


def server(**changes: object) -> RunSettings:
    base = RunSettings(
        scenario=Scenario.SERVER,
        min_duration_ms=60_000,
        min_query_count=100,
        server_target_qps=100.0,
    )
    return base.copy(**changes)


def stop_at(clock: ManualClock, at_ns: int, stop: StopSignal, name: str) -> None:
    """At ``at_ns``, what the Ctrl-C handler does: a reason naming the signal."""
    seconds = at_ns // S

    def fire() -> None:
        if stop.requested:
            stop.abandon()
        else:
            stop.stop(f"interrupted by {name} after {seconds} s", signal=name)

    clock.call_at(at_ns, fire)


def test_a_stop_ends_issuing_and_judges_the_run_invalid_with_the_reason() -> None:
    clock = ManualClock(start_ns=0)
    stop = StopSignal(grace_ns=10 * S)
    stop_at(clock, 5 * S, stop, "SIGINT")
    sut = FakeSUT(clock, latency_ns=50 * MS)
    outcome = run_test(sut, InMemoryQSL(64), server(), clock=clock, stop=stop)
    phase, summary = outcome.performance, outcome.summary
    assert phase is not None and summary is not None
    # About 5 s of a 60 s schedule at 100 QPS: issuing stopped at the request.
    assert 400 < phase.samples_issued < 600
    assert phase.samples_issued < phase.schedule.sample_count
    # Every issued sample completed within the grace period and is kept.
    assert summary.sample_count == phase.samples_issued
    assert outcome.interrupted == "interrupted by SIGINT after 5 s"
    assert outcome.valid is False
    assert "ERROR: interrupted by SIGINT after 5 s" in summary.reasons
    assert outcome.detail.errors >= 1


def test_in_flight_samples_get_the_grace_period_then_count_as_missing() -> None:
    clock = ManualClock(start_ns=0)
    stop = StopSignal(grace_ns=2 * S)
    stop_at(clock, 1 * S, stop, "SIGTERM")
    sut = FakeSUT(clock, latency_ns=5 * S)  # longer than the grace period
    outcome = run_test(sut, InMemoryQSL(64), server(), clock=clock, stop=stop)
    phase, summary = outcome.performance, outcome.summary
    assert phase is not None and summary is not None
    assert phase.samples_issued > 0
    assert summary.sample_count == 0
    assert summary.samples_missing == phase.samples_issued
    assert outcome.interrupted is not None
    assert outcome.interrupted.startswith("interrupted by SIGTERM after 1 s; ")
    assert f"{phase.samples_issued} of {phase.samples_issued} issued" in (
        outcome.interrupted
    )
    # Seen at the next due query; the phase ended when the grace period did,
    # not at the completion timeout.
    assert phase.stopped_at_ns is not None
    assert 1 * S <= phase.stopped_at_ns <= 1 * S + 20 * MS
    assert clock.now_ns() == phase.stopped_at_ns + 2 * S


def test_samples_completing_within_the_grace_period_are_kept() -> None:
    clock = ManualClock(start_ns=0)
    stop = StopSignal(grace_ns=10 * S)
    stop_at(clock, 1 * S, stop, "SIGINT")
    sut = FakeSUT(clock, latency_ns=3 * S)  # in flight at the stop, done in the grace
    outcome = run_test(sut, InMemoryQSL(64), server(), clock=clock, stop=stop)
    assert outcome.summary is not None and outcome.performance is not None
    assert outcome.summary.samples_missing == 0
    assert outcome.summary.sample_count == outcome.performance.samples_issued
    assert outcome.interrupted == "interrupted by SIGINT after 1 s"


def test_a_second_request_skips_the_grace_period() -> None:
    clock = ManualClock(start_ns=0)
    stop = StopSignal(grace_ns=100 * S)
    stop_at(clock, 1 * S, stop, "SIGINT")
    stop_at(clock, 1 * S + 10 * MS, stop, "SIGINT")
    sut = FakeSUT(clock, latency_ns=50 * S)
    outcome = run_test(sut, InMemoryQSL(64), server(), clock=clock, stop=stop)
    assert stop.abandoned
    assert clock.now_ns() < 2 * S  # neither the 100 s grace nor the 50 s latency
    assert outcome.interrupted is not None
    assert "second stop request" in outcome.interrupted


def test_late_completions_after_the_stop_do_not_change_the_records() -> None:
    class Holding(FakeSUT):
        """Keeps the sink to complete everything after the phase ended."""

        def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
            self.held = (batch.ids.copy(), sink)

    clock = ManualClock(start_ns=0)
    stop = StopSignal(grace_ns=0)
    stop_at(clock, 10 * MS, stop, "SIGINT")
    sut = Holding(clock, latency_ns=MS)
    outcome = run_test(
        sut, InMemoryQSL(8), server(scenario=Scenario.OFFLINE), clock=clock, stop=stop
    )
    phase = outcome.performance
    assert phase is not None
    ids, sink = sut.held
    sink.complete(ids)
    assert (phase.records.completed_ns[: phase.samples_issued] == -1).all()


@pytest.mark.parametrize("scenario", [Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM])
def test_closed_loop_scenarios_stop_between_queries(scenario: Scenario) -> None:
    clock = ManualClock(start_ns=0)
    stop = StopSignal()
    stop_at(clock, 2 * S, stop, "SIGINT")
    sut = FakeSUT(clock, latency_ns=10 * MS)
    settings = server(
        scenario=scenario,
        single_stream_expected_latency_ns=10 * MS,
        multi_stream_expected_latency_ns=10 * MS,
    )
    outcome = run_test(sut, InMemoryQSL(64), settings, clock=clock, stop=stop)
    phase = outcome.performance
    assert phase is not None and outcome.summary is not None
    assert 150 <= phase.queries_issued <= 201  # one query per 10 ms for 2 s
    assert outcome.summary.samples_missing == 0
    assert outcome.interrupted == "interrupted by SIGINT after 2 s"


def test_a_stop_in_accuracy_mode_skips_the_remaining_sets_and_performance() -> None:
    clock = ManualClock(start_ns=0)
    stop = StopSignal()
    stop.stop("interrupted by SIGINT after 0 s")  # before the test: nothing issued
    sut = FakeSUT(clock, latency_ns=MS)
    outcome = run_test(
        sut,
        InMemoryQSL(64, 16),
        server(mode=Mode.SUBMISSION_RUN),
        clock=clock,
        stop=stop,
    )
    assert len(outcome.accuracy_phases) == 1
    assert outcome.accuracy_phases[0].samples_issued == 0
    assert outcome.summary is None
    assert outcome.valid is False
    assert outcome.interrupted == "interrupted by SIGINT after 0 s"


def test_find_peak_ends_at_the_stopped_trial() -> None:
    clock = ManualClock(start_ns=0)
    stop = StopSignal()
    stop_at(clock, 90 * S, stop, "SIGINT")
    sut = FakeSUT(clock, latency_ns=MS)
    outcome = run_test(
        sut,
        InMemoryQSL(64),
        server(mode=Mode.FIND_PEAK_PERFORMANCE, min_duration_ms=60_000),
        clock=clock,
        stop=stop,
    )
    assert outcome.summary is not None and outcome.performance is not None
    assert outcome.valid is False
    assert outcome.interrupted is not None
    # The base trial (60 s) passed; the stop came during the second one.
    assert len(outcome.peak_trials) == 1
    assert np.all(outcome.performance.records.issued_ns >= -1)
