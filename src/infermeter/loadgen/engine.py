"""The issue loop: one run phase of one schedule against a SUT, in its own thread.

Open loop (Server, rates, traces): every query that is due is issued in one
``QueryBatch`` with its own scheduled time, against absolute deadlines.
Closed loop (SingleStream, MultiStream, fixed concurrency): the next query goes
out when the sink reports that fewer than ``max_in_flight`` are outstanding.
Offline: one query holding every sample. A phase ends when every issued sample
has completed or failed, or when the SUT makes no progress for the completion
timeout (then the run is INVALID, never hung), or after a ``StopSignal``
(issuing stops; in-flight samples get the grace period).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock
from infermeter.errors import SUTError
from infermeter.loadgen.closed_loop import ClosedLoopFeed, ClosedLoopSUT, LoopRules
from infermeter.loadgen.interfaces import QueryBatch, SystemUnderTest
from infermeter.loadgen.records import Records, Sink
from infermeter.loadgen.schedule import Schedule
from infermeter.loadgen.settings import NS_PER_MS, EffectiveSettings, Scenario
from infermeter.loadgen.stop import StopSignal

MAX_BATCH = 1 << 16  # due queries handed over per call when far behind
# With a stop signal the issue loop waits on it until this close to a due
# time, then sleeps the rest precisely (an event wait can wake late).
STOP_WAKE_MARGIN_NS = 2_000_000
Progress = Callable[[int, int], None]


OUT_OF_QUERIES = (
    "Ending early: Ran out of generated queries to issue before the minimum query "
    "count and test duration were reached. Please update the relevant expected "
    "latency or target qps in the TestSettings so they are more accurate."
)


@dataclass(frozen=True, slots=True)
class IssuePolicy:
    """How a phase issues its schedule."""

    closed_loop: bool
    max_in_flight: int = 1  # queries, closed loop only
    stop_on_min: bool = (
        False  # closed loop: stop once min queries and min duration are met
    )
    # closed loop: let a SUT that offers to run it on its own thread do so
    sut_loop: bool = True

    @classmethod
    def for_scenario(cls, scenario: Scenario, *, accuracy: bool) -> IssuePolicy:
        if scenario in (Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM):
            return cls(closed_loop=True, max_in_flight=1, stop_on_min=not accuracy)
        return cls(closed_loop=False)


@dataclass(slots=True)
class PhaseResult:
    """What one phase produced: the schedule, the records and how it ended."""

    schedule: Schedule
    records: Records
    start_ns: int
    query_origin_ns: npt.NDArray[np.int64]  # latency origin per query (absolute)
    queries_issued: int = 0
    samples_issued: int = 0
    end_ns: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    timed_out: bool = False
    ran_out_of_queries: bool = False
    stopped_at_ns: int | None = None  # when a StopSignal was seen (engine clock)
    stop_reason: str | None = None  # the run error the stop logged
    response_data: dict[int, bytes] = field(default_factory=dict)
    token_data: dict[int, bytes] = field(default_factory=dict)


class PhaseWatcher(Protocol):
    """Sees a phase while it runs (the records journal): started, then ended."""

    def phase_started(self, phase: LivePhase) -> None: ...

    def phase_ended(self) -> None: ...


class LivePhase(Protocol):
    """What a watcher may read while a phase runs (read-only, under ``sink.lock``)."""

    schedule: Schedule
    records: Records
    sink: Sink
    origin: npt.NDArray[np.int64]
    start: int


class _PhaseRunner:
    def __init__(
        self,
        sut: SystemUnderTest,
        schedule: Schedule,
        settings: EffectiveSettings,
        clock: Clock,
        policy: IssuePolicy,
        log_mask: npt.NDArray[np.bool_] | None,
        stop: StopSignal | None = None,
    ) -> None:
        self.sut = sut
        self.stop = stop
        self.schedule = schedule
        self.settings = settings
        self.clock = clock
        self.policy = policy
        self.records = Records.allocate(
            schedule.sample_count, tokens=settings.is_token_run
        )
        self.sink = Sink(
            self.records,
            clock,
            log_mask=log_mask,
            keep_first_token_data=settings.is_token_run,
        )
        self.origin = np.zeros(schedule.query_count, dtype=np.int64)
        self.queries = 0
        self.errors: Counter[str] = Counter()
        self.ran_out = False
        self.timed_out = False
        self.start = 0
        self.stopped = False
        self.stopped_at: int | None = None
        self.grace_end: int | None = None  # None: the completion timeout applies
        self.crash: BaseException | None = None
        # A SUT that sends at scheduled times itself (remote clients) asks for
        # its queries this long before they are due.
        self.ahead = max(0, int(getattr(sut, "issue_ahead_ns", 0) or 0))
        if stop is not None:
            stop.wake_with(self.sink.wake)
            stop.wake_with(self.sink.interrupt)

    # -- issuing -------------------------------------------------------------------
    def issue(
        self, q0: int, q1: int, now: int, scheduled: npt.NDArray[np.int64]
    ) -> None:
        self.sut.issue_query(self._stamp(q0, q1, now, scheduled), self.sink)

    def batch(self, q0: int, q1: int, now: int) -> QueryBatch:
        """Closed-loop queries ``q0..q1`` issued at ``now`` (for a ``ClosedLoopFeed``)."""
        self.origin[q0:q1] = now
        return self._stamp(q0, q1, now, self.origin[q0:q1])

    def _stamp(
        self, q0: int, q1: int, now: int, scheduled: npt.NDArray[np.int64]
    ) -> QueryBatch:
        s0, s1 = self.schedule.sample_range(q0, q1)
        self.records.issued_ns[s0:s1] = now
        self.sink.issued = s1
        self.queries = q1
        offsets = self.schedule.query_offsets
        if offsets is not None:
            per_sample = np.repeat(scheduled, np.diff(offsets[q0 : q1 + 1]))
        elif self.schedule.samples_per_query == 1:
            per_sample = scheduled
        else:
            per_sample = np.repeat(scheduled, self.schedule.samples_per_query)
        return QueryBatch(
            ids=np.arange(s0, s1, dtype=np.int64),
            sample_indices=self.schedule.sample_indices[s0:s1],
            scheduled_ns=per_sample,
        )

    def limits_hit(self, q: int, now: int) -> bool:
        if self.sink.aborted:  # the SUT ended the phase; its reason is logged
            self.stopped = True
            return True
        if self.stopping():
            return True  # the reason is logged when the phase ends (``_result``)
        s = self.settings
        # LoadGen's texts: one issue thread, numbered 0.
        if s.max_query_count and q >= s.max_query_count:
            self.errors[
                "IssueQueryThread 0 Ending early: Max query count reached. "
                f"query_count {q}"
            ] += 1
            return True
        if s.max_duration_ms and now - self.start >= s.max_duration_ms * NS_PER_MS:
            self.errors[
                "IssueQueryThread 0 Ending early: Max test duration reached. "
                f"duration_ns {now - self.start}"
            ] += 1
            return True
        return False

    def open_loop(self) -> None:
        rel = self.schedule.scheduled_ns
        n = self.schedule.query_count
        max_async = self.settings.max_async_queries
        self.origin[:] = rel + self.start
        q = 0
        while q < n:
            due = int(self.origin[q]) - self.ahead
            if self.clock.now_ns() < due:
                self.sleep_until(due)
            now = self.clock.now_ns()
            if self.limits_hit(q, now):
                return
            window = self.origin[q : q + MAX_BATCH]
            end = q + int(np.searchsorted(window, now + self.ahead, side="right"))
            if self.settings.max_query_count:
                end = min(end, self.settings.max_query_count)
            if max_async and self.sink.issued - self.sink.done + (end - q) > max_async:
                self.errors["Too many outstanding queries."] += 1
                return
            self.issue(q, end, now, self.origin[q:end])
            q = end

    def sleep_until(self, due: int) -> None:
        early = due - STOP_WAKE_MARGIN_NS
        if self.clock.now_ns() < early and self.clock.wait_for(
            self.sink.interrupt, early
        ):
            return  # stopped or aborted: limits_hit says so next
        self.clock.sleep_until(due)

    def stopping(self) -> bool:
        """True once a stop was requested; notes when it was first seen."""
        stop = self.stop
        if stop is None or not stop.requested:
            return False
        if self.stopped_at is None:
            self.stopped = True
            self.stopped_at = self.clock.now_ns()
            if stop.grace_ns is not None:
                self.grace_end = self.stopped_at + stop.grace_ns
        return True

    def closed_loop(self) -> None:
        """Issue one query at a time (or ``max_in_flight``); LoadGen's SS/MS loop.

        A SUT that runs the loop on its own thread gets it (``closed_loop.py``).
        """
        if self.policy.sut_loop and isinstance(self.sut, ClosedLoopSUT):
            feed = self.feed()
            if self.sut.drive_closed_loop(feed):
                self.watch(feed)
                # The feed ends (and wakes this thread) inside the pump that
                # issues its last batch, before ``sink.issued`` counts it: wait
                # for that pump, or the final wait misses those samples.
                with feed.lock:
                    pass
                if feed.error is not None:
                    raise feed.error
                return
        n = self.schedule.query_count
        s = self.settings
        min_duration_ns = s.min_duration_ms * NS_PER_MS
        q = 0
        while q < n:
            if not self.wait_below(self.policy.max_in_flight):
                return
            now = self.clock.now_ns()
            if self.limits_hit(q, now):
                return
            self.origin[q] = now
            self.issue(q, q + 1, now, self.origin[q : q + 1])
            q += 1
            # LoadGen ends naturally once the query just issued meets both minimums.
            if (
                self.policy.stop_on_min
                and q >= s.min_query_count
                and (now - self.start >= min_duration_ns)
            ):
                return
        if self.policy.stop_on_min:
            self.ran_out = True

    def feed(self) -> ClosedLoopFeed:
        s = self.settings
        rules = LoopRules(
            query_count=self.schedule.query_count,
            samples_per_query=self.schedule.samples_per_query,
            max_in_flight=self.policy.max_in_flight,
            stop_on_min=self.policy.stop_on_min,
            min_query_count=s.min_query_count,
            min_duration_ns=s.min_duration_ms * NS_PER_MS,
        )
        return ClosedLoopFeed(self, rules, self.start)

    def watch(self, feed: ClosedLoopFeed) -> None:
        """While the SUT runs the loop: end it on a stop, an abort or a timeout."""
        sink = self.sink
        timeout = self.settings.requested.completion_timeout_ns
        while not feed.ended:
            if sink.aborted:
                self.stopped = True
                feed.end()
                return
            if self.stop is not None and self.stop.requested:
                with feed.lock:  # the SUT's thread may be in ``limits_hit``
                    self.stopping()
                    feed.end()
                return
            # The feed's end, a stop and an abort all set ``interrupt``.
            if self.clock.wait_for(sink.interrupt, sink.last_progress_ns + timeout):
                continue
            if self.clock.now_ns() - sink.last_progress_ns >= timeout:
                self.timed_out = True
                feed.end()
                return

    def wait_below(self, in_flight: int) -> bool:
        """Block until fewer than ``in_flight`` queries are outstanding."""
        spq = self.schedule.samples_per_query
        return self.wait_done(self.sink.issued - (in_flight - 1) * spq)

    def wait_done(self, threshold: int, *, final: bool = False) -> bool:
        """Wait until ``threshold`` samples are done; False on a timeout.

        A stop ends the wait between queries (``limits_hit`` then ends the
        issuing); in the ``final`` wait it bounds the wait by the grace
        period, and ``abandon`` ends it.
        """
        timeout = self.settings.requested.completion_timeout_ns
        while not self.sink.arm(threshold):
            if self.sink.aborted:
                return False
            deadline = self.sink.last_progress_ns + timeout
            if self.stopping():
                assert self.stop is not None
                if not final:
                    return True
                if self.stop.abandoned:
                    return False
                if self.grace_end is not None:
                    deadline = min(deadline, self.grace_end)
            if self.clock.wait_for(self.sink.wake, deadline):
                continue
            now = self.clock.now_ns()
            if self.grace_end is not None and now >= self.grace_end:
                return False
            if now - self.sink.last_progress_ns >= timeout:
                self.timed_out = True
                return False
        return True

    def run(self) -> None:
        try:
            self.start = self.clock.now_ns()
            self.sink.last_progress_ns = self.start
            if self.policy.closed_loop:
                self.closed_loop()
            else:
                self.open_loop()
            self.sut.flush_queries()
            if not self.timed_out:
                self.wait_done(self.sink.issued, final=True)
        except BaseException as exc:  # surfaced in the caller's thread
            self.crash = exc
        finally:
            # Whatever completes after the phase ended (after a stop or a
            # timeout) must not change records that are being judged.
            self.sink.seal()


def run_phase(
    sut: SystemUnderTest,
    schedule: Schedule,
    settings: EffectiveSettings,
    clock: Clock,
    *,
    policy: IssuePolicy | None = None,
    log_mask: npt.NDArray[np.bool_] | None = None,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
    watcher: PhaseWatcher | None = None,
) -> PhaseResult:
    """Issue ``schedule`` to ``sut`` from a dedicated thread and wait for the end.

    ``stop`` ends the issuing early (the phase then reports why); ``watcher``
    sees the phase while it runs.
    """
    accuracy = settings.mode.value == "AccuracyOnly"
    policy = policy or IssuePolicy.for_scenario(settings.scenario, accuracy=accuracy)
    runner = _PhaseRunner(sut, schedule, settings, clock, policy, log_mask, stop)
    thread = threading.Thread(target=runner.run, name="infermeter-issue", daemon=True)
    if watcher is not None:
        watcher.phase_started(runner)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
            if progress is not None:
                progress(runner.sink.done, schedule.sample_count)
    finally:
        if watcher is not None:
            watcher.phase_ended()
    if runner.crash is not None:
        raise SUTError(
            f"the SUT raised during the run: {runner.crash!r}"
        ) from runner.crash
    return _result(runner)


def _result(runner: _PhaseRunner) -> PhaseResult:
    sink = runner.sink
    errors = runner.errors + sink.errors
    if runner.timed_out:
        missing = sink.issued - sink.done
        timeout_s = runner.settings.requested.completion_timeout_ns / 1e9
        errors[
            f"The SUT stopped answering: {missing} of {sink.issued} issued samples never "
            f"completed (no progress for {timeout_s:g} s, the completion timeout)."
        ] += 1
    if (
        runner.ran_out
        and not runner.stopped
        and runner.settings.mode.value == "PerformanceOnly"
    ):
        errors[OUT_OF_QUERIES] += 1
    reason = _stop_reason(runner)
    if reason is not None:
        errors[reason] += 1
    completed = runner.records.completed_ns[: sink.issued]
    end = int(completed.max()) if completed.shape[0] else runner.start
    return PhaseResult(
        schedule=runner.schedule,
        records=runner.records,
        start_ns=runner.start,
        query_origin_ns=runner.origin,
        queries_issued=runner.queries,
        samples_issued=sink.issued,
        end_ns=max(end, runner.start),
        errors=errors,
        timed_out=runner.timed_out,
        ran_out_of_queries=runner.ran_out,
        stopped_at_ns=runner.stopped_at,
        stop_reason=reason,
        response_data=sink.response_data,
        token_data=sink.token_data,
    )


def _stop_reason(runner: _PhaseRunner) -> str | None:
    """The stop's reason, and the samples it left in flight, as one run error."""
    stop = runner.stop
    if runner.stopped_at is None or stop is None:
        return None
    reason = stop.reason or "the run was stopped"
    sink = runner.sink
    missing = sink.issued - sink.done
    if missing:
        if stop.abandoned:
            after = "a second stop request"
        elif stop.grace_ns is not None:
            after = f"{stop.grace_ns / 1e9:g} s"
        else:
            after = "the completion timeout"
        reason += (
            f"; {missing} of {sink.issued} issued samples were still in flight "
            f"(not waited for after {after})"
        )
    return reason
