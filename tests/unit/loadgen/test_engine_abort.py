"""A SUT can end a phase at once (``Sink.abort``) and take queries ahead of time."""

from __future__ import annotations

import numpy as np

from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import RunSettings, Scenario
from infermeter.suts.fake import FakeSUT
from infermeter.testing import InMemoryQSL, ManualClock

MS = 1_000_000


def server(**changes: object) -> RunSettings:
    base = RunSettings(
        scenario=Scenario.SERVER,
        min_duration_ms=10_000,
        min_query_count=100,
        server_target_qps=100.0,
    )
    return base.copy(**changes)


class DiesAfter(FakeSUT):
    """Answers like a FakeSUT, then on the ``n``-th batch ends the phase with an error."""

    def __init__(self, clock: ManualClock, n: int) -> None:
        super().__init__(clock, latency_ns=5 * MS)
        self.n = n
        self.batches = 0

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self.batches += 1
        if self.batches == self.n:
            sink.fail(batch.ids, "client died")
            sink.abort("remote client lost: worker 1 died: killed by signal 9")
            return
        super().issue_query(batch, sink)


def test_abort_ends_the_phase_at_once_and_the_run_is_invalid() -> None:
    clock = ManualClock()
    sut = DiesAfter(clock, n=20)
    start = clock.now_ns()
    outcome = run_test(sut, InMemoryQSL(64), server(), clock=clock)
    phase = outcome.performance
    assert phase is not None
    # ~1,000 queries were scheduled over 10 s; issuing stopped at the 20th batch.
    assert sut.batches == 20
    assert phase.samples_issued < 30
    assert clock.now_ns() - start < 1_000 * MS
    assert outcome.valid is False
    assert "remote client lost: worker 1 died: killed by signal 9" in phase.errors


class Ahead:
    """Takes each query 50 ms early, "sends" it at its time, answers 2 ms later."""

    name = "ahead"
    issue_ahead_ns = 50 * MS

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.handed: list[tuple[int, np.ndarray]] = []

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self.handed.append((self.clock.now_ns(), batch.scheduled_ns.copy()))
        for sid, at in zip(
            batch.ids.tolist(), batch.scheduled_ns.tolist(), strict=True
        ):
            ids = np.array([sid], dtype=np.int64)
            self.clock.call_at(at, lambda ids=ids, at=at: sink.mark_issued(ids, at))  # type: ignore[attr-defined]
            self.clock.call_at(at + 2 * MS, lambda ids=ids: sink.complete(ids))

    def flush_queries(self) -> None:
        pass


def test_a_sut_that_issues_ahead_gets_queries_early_and_stamps_its_own_issue() -> None:
    clock = ManualClock()
    sut = Ahead(clock)
    outcome = run_test(
        sut,
        InMemoryQSL(64),
        server(min_duration_ms=6000, min_query_count=600),
        clock=clock,
    )
    lead = [int((sched - now).max()) for now, sched in sut.handed]
    # Every query is handed over no later than its time and at most 50 ms early.
    assert min(int((s - n).min()) for n, s in sut.handed) >= 0
    assert max(lead) <= 50 * MS and max(lead) > 40 * MS
    phase = outcome.performance
    assert phase is not None
    n = phase.samples_issued
    # The SUT's issue stamps replaced the hand-over ones: no lateness at all.
    assert np.array_equal(phase.records.issued_ns[:n], phase.query_origin_ns[:n])
    assert outcome.valid is True
