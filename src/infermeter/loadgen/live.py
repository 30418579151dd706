"""A running phase's figures so far, for a live view (never on the hot path).

Read by whoever watches a phase (``PhaseWatcher``), at its own pace (the TTY
bar: once a second): a pass over the records arrays without the sink's lock,
so the completion path never waits for a view. A sample completing during the
pass may be counted or not; the figures are for eyes, the run's own metrics
come from the sealed records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infermeter.loadgen.engine import LivePhase, PhaseWatcher
from infermeter.loadgen.records import STATUS_OK, UNSET

SETTLE_S = 10.0


@dataclass(frozen=True, slots=True)
class LiveFigures:
    """A phase so far: samples done, their rate, and the p99s of those done."""

    ok: int
    failed: int
    per_s: float | None  # samples completed per second since the phase began
    tokens_per_s: float | None  # output tokens per second (token runs)
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    issued_per_s: float | None = None  # samples issued per second so far

    def behind(self) -> bool:
        """Completing under half as fast as issuing: the run will take longer
        than its plan (which assumes the load is served as issued)."""
        if self.issued_per_s is None:
            return False
        return (self.per_s or 0.0) < 0.5 * self.issued_per_s


def live_figures(phase: LivePhase) -> LiveFigures:
    """``phase``'s figures over the samples completed so far."""
    n = int(phase.sink.issued)
    rec = phase.records
    done = rec.completed_ns[:n]
    finished = done != UNSET
    ok = finished & (rec.status[:n] == STATUS_OK)
    n_ok = int(ok.sum())
    failed = int(finished.sum()) - n_ok
    issued = _issued_per_s(phase, n)
    if not n_ok:
        return LiveFigures(0, failed, None, None, None, None, issued)
    span_s = (int(done[ok].max()) - phase.start) / 1e9
    per_s = n_ok / span_s if span_s > 0 else None
    if not rec.has_tokens:
        return LiveFigures(n_ok, failed, per_s, None, None, None, issued)
    tokens = rec.n_tokens[:n].astype(np.int64)
    first = rec.first_token_ns[:n]
    timed = ok & (first != UNSET)
    origin = _origins(phase, n)
    ttft = (first[timed] - origin[timed]) / 1e6
    paced = timed & (tokens > 1)
    tpot = (done[paced] - first[paced]) / (tokens[paced] - 1) / 1e6
    return LiveFigures(
        ok=n_ok,
        failed=failed,
        per_s=per_s,
        tokens_per_s=float(tokens[ok].sum()) / span_s if span_s > 0 else None,
        ttft_p99_ms=float(np.percentile(ttft, 99)) if ttft.size else None,
        tpot_p99_ms=float(np.percentile(tpot, 99)) if tpot.size else None,
        issued_per_s=issued,
    )


def _issued_per_s(phase: LivePhase, n: int) -> float | None:
    """Samples issued per second, once the phase has issued for ``SETTLE_S``
    (before, completions lag issues by a latency and the pace compares badly)."""
    if not n:
        return None
    span_s = (int(phase.records.issued_ns[:n].max()) - phase.start) / 1e9
    return n / span_s if span_s >= SETTLE_S else None


def _origins(phase: LivePhase, n: int) -> np.ndarray:
    """Each issued sample's latency origin (its query's scheduled time)."""
    schedule = phase.schedule
    if schedule.samples_per_query == 1 and schedule.query_offsets is None:
        return phase.origin[:n]
    return phase.origin[schedule.query_of_samples()[:n]]


class Watchers:
    """Several watchers of one phase, in order (the journal, a live view)."""

    def __init__(self, *watchers: PhaseWatcher) -> None:
        self.watchers = watchers

    def phase_started(self, phase: LivePhase) -> None:
        for watcher in self.watchers:
            watcher.phase_started(phase)

    def phase_ended(self) -> None:
        for watcher in self.watchers:
            watcher.phase_ended()


def watch_all(*watchers: PhaseWatcher | None) -> PhaseWatcher | None:
    """The watchers given (None left out) as one, or None."""
    present = [w for w in watchers if w is not None]
    if len(present) <= 1:
        return present[0] if present else None
    return Watchers(*present)
