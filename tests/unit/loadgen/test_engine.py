"""Scenario rules of the engine, in virtual time (ManualClock + FakeSUT)."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.loadgen.logs.summary_file import render_summary
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import Mode, RunSettings, Scenario
from infermeter.suts.fake import FakeSUT
from infermeter.testing import InMemoryQSL, ManualClock

MS = 1_000_000


class RecordingFake(FakeSUT):
    """A FakeSUT that remembers every batch it was given."""

    def __init__(self, clock: ManualClock, **kwargs: object) -> None:
        super().__init__(clock, **kwargs)  # type: ignore[arg-type]
        self.batches: list[QueryBatch] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self.batches.append(batch)
        super().issue_query(batch, sink)


def settings(scenario: Scenario, **changes: object) -> RunSettings:
    base = RunSettings(
        scenario=scenario,
        min_duration_ms=1000,
        min_query_count=50,
        server_target_qps=200.0,
        offline_expected_qps=500.0,
        single_stream_expected_latency_ns=2 * MS,
        multi_stream_expected_latency_ns=2 * MS,
    )
    return base.copy(**changes)


def test_offline_issues_every_sample_in_one_query() -> None:
    clock = ManualClock()
    sut = RecordingFake(clock, latency_ns=5 * MS)
    outcome = run_test(sut, InMemoryQSL(100), settings(Scenario.OFFLINE), clock=clock)
    assert len(sut.batches) == 1
    # 1.1 x 1 s x 500 QPS = 550 samples: the loaded set of 100 repeated.
    assert len(sut.batches[0]) == 550
    assert outcome.summary is not None
    assert outcome.summary.sample_count == 550
    assert outcome.summary.samples_per_second == pytest.approx(550 / 0.005)


def test_single_stream_has_one_query_in_flight_and_measures_from_issue() -> None:
    clock = ManualClock()
    sut = RecordingFake(clock, latency_ns=3 * MS)
    outcome = run_test(
        sut, InMemoryQSL(64), settings(Scenario.SINGLE_STREAM), clock=clock
    )
    assert all(len(b) == 1 for b in sut.batches)
    starts = [int(b.scheduled_ns[0]) for b in sut.batches]
    assert np.all(
        np.diff(starts) == 3 * MS
    )  # next query only after the previous finished
    summary = outcome.summary
    assert summary is not None
    assert summary.latency is not None
    assert summary.latency.min == summary.latency.max == 3 * MS
    # ends with the first query issued at or after 1 s (the 335th, at 1.002 s)
    assert summary.query_count == 335
    assert summary.final_issued_s == pytest.approx(1.002)
    assert summary.valid


def test_multi_stream_queries_hold_contiguous_samples_of_the_padded_set() -> None:
    clock = ManualClock()
    sut = RecordingFake(clock, latency_ns=4 * MS)
    qsl = InMemoryQSL(200, 64)
    outcome = run_test(
        sut, qsl, settings(Scenario.MULTI_STREAM, min_query_count=662), clock=clock
    )
    loaded = qsl.loaded[0]
    assert len(loaded) == 64 + 7  # MultiStream padding
    for batch in sut.batches[:50]:
        assert len(batch) == 8
        first = loaded.index(int(batch.sample_indices[0]))
        assert batch.sample_indices.tolist() == loaded[first : first + 8]
    assert outcome.summary is not None
    assert outcome.summary.query_latency is not None
    assert outcome.summary.query_latency.max == 4 * MS
    assert outcome.summary.valid


def test_server_issues_each_query_at_its_scheduled_time() -> None:
    clock = ManualClock()
    sut = RecordingFake(clock, latency_ns=1 * MS)
    outcome = run_test(sut, InMemoryQSL(1024), settings(Scenario.SERVER), clock=clock)
    phase = outcome.performance
    assert phase is not None
    start = phase.start_ns
    scheduled = np.concatenate([b.scheduled_ns for b in sut.batches]) - start
    assert scheduled.tolist() == phase.schedule.scheduled_ns.tolist()
    issued = phase.records.issued_ns[: phase.samples_issued] - start
    assert np.array_equal(
        issued, phase.schedule.scheduled_ns
    )  # no lateness in virtual time
    summary = outcome.summary
    assert summary is not None
    assert summary.latency is not None
    assert summary.latency.max == 1 * MS
    assert summary.overlatency_count == 0


def test_server_with_too_few_queries_needs_266_more() -> None:
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=1 * MS)
    run = settings(
        Scenario.SERVER,
        min_query_count=193,
        min_duration_ms=0,
        server_target_qps=1000.0,
    )
    outcome = run_test(sut, InMemoryQSL(1024), run, clock=clock)
    summary = outcome.summary
    assert summary is not None
    assert summary.query_count == 193
    assert summary.early_stopping is not None
    assert not summary.early_stopping.ok
    assert "Would need to run at least 266 more queries" in summary.early_stopping.text
    assert not summary.valid


def test_server_latency_bound_makes_the_run_invalid() -> None:
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=150 * MS)
    outcome = run_test(sut, InMemoryQSL(1024), settings(Scenario.SERVER), clock=clock)
    summary = outcome.summary
    assert summary is not None
    assert not summary.perf_constraints_met
    assert "Reduce target QPS to improve latency." in summary.reasons


def test_llm_token_metrics_follow_loadgen_definitions() -> None:
    clock = ManualClock()
    sut = FakeSUT(
        clock, token_run=True, ttft_ns=40 * MS, tpot_ns=5 * MS, output_tokens=11
    )
    run = settings(
        Scenario.SERVER,
        use_token_latencies=True,
        ttft_latency=2000 * MS,
        tpot_latency=200 * MS,
    )
    outcome = run_test(sut, InMemoryQSL(1024), run, clock=clock)
    s = outcome.summary
    assert s is not None
    assert s.ttft is not None and s.tpot is not None and s.latency is not None
    assert s.ttft.min == s.ttft.max == 40 * MS
    # TPOT = (latency - TTFT) / (n_tokens - 1) = (40 + 10 x 5 - 40) / 10
    assert s.tpot.min == s.tpot.max == 5 * MS
    assert s.token_count == 11 * s.sample_count
    assert s.tokens_per_second == pytest.approx(s.token_count / s.final_done_s)
    assert s.es_ttft is not None and s.es_tpot is not None


def test_missing_first_token_and_bad_n_tokens_are_errors() -> None:
    class NoFirstToken:
        name = "NoFirstToken"

        def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
            sink.complete(batch.ids, n_tokens=1)

        def flush_queries(self) -> None:
            pass

    run = settings(Scenario.SERVER, use_token_latencies=True)
    outcome = run_test(NoFirstToken(), InMemoryQSL(64), run, clock=ManualClock())
    s = outcome.summary
    assert s is not None
    assert not s.valid
    assert any("first token" in message for message in s.errors)
    assert any("n_tokens must be greater than 1" in message for message in s.errors)


def test_a_sut_that_never_answers_ends_invalid_instead_of_hanging() -> None:
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=1 * MS, hang_after=10)
    run = settings(Scenario.SERVER, completion_timeout_ns=5_000 * MS)
    outcome = run_test(sut, InMemoryQSL(64), run, clock=clock)
    s = outcome.summary
    assert s is not None
    assert not s.valid
    assert s.samples_missing == outcome.performance.samples_issued - 10  # type: ignore[union-attr]
    assert any("stopped answering" in r for r in s.reasons)


def test_closed_loop_sut_that_hangs_is_reported_too() -> None:
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=1 * MS, hang_after=3)
    run = settings(Scenario.SINGLE_STREAM, completion_timeout_ns=1_000 * MS)
    outcome = run_test(sut, InMemoryQSL(64), run, clock=clock)
    assert outcome.summary is not None
    assert outcome.summary.query_count == 4
    assert any("stopped answering" in r for r in outcome.summary.reasons)


def test_double_and_unknown_completions_are_reported() -> None:
    class Sloppy:
        name = "Sloppy"

        def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
            sink.complete(batch.ids)
            sink.complete(batch.ids)  # twice
            sink.complete(np.asarray([10**9], dtype=np.int64))  # never issued

        def flush_queries(self) -> None:
            pass

    outcome = run_test(
        Sloppy(), InMemoryQSL(64), settings(Scenario.OFFLINE), clock=ManualClock()
    )
    s = outcome.summary
    assert s is not None
    assert not s.valid
    assert s.errors["a sample was completed twice"] == 550
    assert s.errors["completion for an id that was never issued"] == 1


def test_failed_samples_are_data_and_make_the_run_invalid() -> None:
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=1 * MS, fail_every=10)
    outcome = run_test(sut, InMemoryQSL(64), settings(Scenario.OFFLINE), clock=clock)
    s = outcome.summary
    assert s is not None
    assert s.samples_failed == 55
    assert s.sample_count + s.samples_failed == 550
    assert s.failure_reasons == {"injected failure (fake SUT fail_every)": 55}
    assert not s.valid


def test_accuracy_mode_issues_every_sample_once_across_sets() -> None:
    clock = ManualClock()
    sut = RecordingFake(clock, latency_ns=1 * MS)
    qsl = InMemoryQSL(300, 128)
    outcome = run_test(
        sut, qsl, settings(Scenario.OFFLINE, mode=Mode.ACCURACY_ONLY), clock=clock
    )
    issued = sorted(int(i) for b in sut.batches for i in b.sample_indices)
    assert issued == list(range(300))
    assert len(qsl.loaded) == 3  # sets of 128, 128, 44
    entries = outcome.accuracy_entries
    assert sorted(e.qsl_idx for e in entries) == list(range(300))
    assert [e.seq_id for e in sorted(entries, key=lambda e: e.seq_id)] == list(
        range(300)
    )
    assert outcome.summary is None


def test_max_query_count_ends_early_with_an_error() -> None:
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=1 * MS)
    run = settings(Scenario.SERVER, max_query_count=60)
    outcome = run_test(sut, InMemoryQSL(64), run, clock=clock)
    assert outcome.summary is not None
    assert outcome.summary.query_count == 60
    assert (
        "IssueQueryThread 0 Ending early: Max query count reached. query_count 60"
        in outcome.summary.errors
    )


class SingleWorker:
    """One sample at a time, 2.5 ms each: a queue whose latency explodes near 400 QPS."""

    name = "SingleWorker"

    def __init__(self, clock: ManualClock, service_ns: int) -> None:
        self.clock = clock
        self.service_ns = service_ns
        self.busy_until = 0

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        for sample_id in batch.ids.tolist():
            self.busy_until = (
                max(self.busy_until, self.clock.now_ns()) + self.service_ns
            )
            ids = np.asarray([sample_id], dtype=np.int64)
            self.clock.call_at(self.busy_until, lambda ids=ids: sink.complete(ids))

    def flush_queries(self) -> None:
        pass


def test_find_peak_brackets_the_highest_valid_rate() -> None:
    clock = ManualClock()
    run = settings(
        Scenario.SERVER,
        mode=Mode.FIND_PEAK_PERFORMANCE,
        server_target_qps=100.0,
        min_duration_ms=2000,
        server_find_peak_qps_decimals_of_precision=0,
    )
    outcome = run_test(
        SingleWorker(clock, 2_500_000), InMemoryQSL(64), run, clock=clock
    )
    assert outcome.summary is not None
    peak = outcome.summary.settings.target_qps
    trials = dict(outcome.peak_trials)
    assert trials[peak] is True
    failed_above = [q for q, ok in outcome.peak_trials if not ok and q > peak]
    assert failed_above
    assert int(peak) + 1 >= int(min(failed_above))  # bracketed to 1 QPS (0 decimals)
    # Capacity is 400 QPS; over a 2 s run the backlog of a rate q adds about
    # (q - 400) x 2 s x 2.5 ms of latency, so p99 crosses 100 ms near 420 QPS.
    assert 300 < peak <= 420


def test_find_peak_needs_server() -> None:
    from infermeter.errors import ConfigError

    with pytest.raises(
        ConfigError, match="FindPeakPerformance needs the Server scenario"
    ):
        run_test(
            FakeSUT(ManualClock()),
            InMemoryQSL(8),
            settings(Scenario.OFFLINE, mode=Mode.FIND_PEAK_PERFORMANCE),
            clock=ManualClock(),
        )


def test_too_many_outstanding_queries_ends_the_server_run() -> None:
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=1_000 * MS)  # far slower than the arrivals
    run = settings(Scenario.SERVER, server_max_async_queries=5)
    outcome = run_test(sut, InMemoryQSL(64), run, clock=clock)
    s = outcome.summary
    assert s is not None
    assert s.query_count == 5
    assert "Too many outstanding queries." in s.errors
    assert not s.valid


def test_a_server_run_where_nothing_completed_has_no_rate_and_misses_its_bounds() -> (
    None
):
    clock = ManualClock()
    sut = FakeSUT(clock, latency_ns=1 * MS, fail_every=1)
    outcome = run_test(sut, InMemoryQSL(64), settings(Scenario.SERVER), clock=clock)
    s = outcome.summary
    assert s is not None
    assert s.sample_count == 0 and s.samples_failed > 0
    # LoadGen's (samples - 1) / time would be negative here.
    assert s.completed_samples_per_second == 0.0
    assert s.qps_with_loadgen_overhead == 0.0
    # The offered rate still counts every scheduled sample, failed or not.
    assert s.scheduled_samples == s.samples_failed + s.samples_missing > 1
    expected = (s.scheduled_samples - 1) / s.final_scheduled_s
    assert s.scheduled_samples_per_second == pytest.approx(expected)
    assert s.scheduled_samples_per_second > 0
    assert s.perf_constraints_met is False
    assert "No sample completed" in s.perf_recommendation
    text = render_summary(s, sut_name="fake", warnings=0, errors=0)
    assert "Performance constraints satisfied : NO" in text
    assert "-0." not in text
