"""Metrics, early stopping and validity of a finished run: pure functions, ints in and out.

Follows LoadGen's ``results.cc`` (spec sections 2.3, 2.4 and 3): percentile =
``sorted[floor(n * p)]``, integer-ns means, TTFT from the scheduled time,
TPOT = ``(latency - ttft) // (n_tokens - 1)``. On top of LoadGen's rules an
infermeter verdict is also INVALID when samples failed, never completed, or
the run logged errors (completion timeout, double completion, ...).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.engine import PhaseResult
from infermeter.loadgen.records import STATUS_OK, UNSET
from infermeter.loadgen.settings import NS_PER_S, EffectiveSettings, Scenario
from infermeter.loadgen.validity import EarlyStoppingResult, judge

PERCENTILES = (0.50, 0.90, 0.95, 0.97, 0.99, 0.999)
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """min / max / mean and the percentile grid of one latency series (ns)."""

    count: int
    min: int
    max: int
    mean: int
    percentiles: dict[float, int]
    target: int
    sorted_ns: I64 = field(repr=False, compare=False)

    @classmethod
    def of(
        cls, values: I64, target_percentile: float, *, owned: bool = False
    ) -> LatencyStats | None:
        """Stats of ``values``; ``owned`` lets it sort them in place (no copy)."""
        if values.shape[0] == 0:
            return None
        if owned:
            values.sort()
            ordered = values
        else:
            ordered = np.sort(values)
        n = int(ordered.shape[0])
        pick = {p: int(ordered[min(n - 1, int(n * p))]) for p in PERCENTILES}
        return cls(
            count=n,
            min=int(ordered[0]),
            max=int(ordered[-1]),
            mean=int(int(ordered.sum()) // n),
            percentiles=pick,
            target=int(ordered[min(n - 1, int(n * target_percentile))]),
            sorted_ns=ordered,
        )


@dataclass(slots=True)
class Summary:
    """Everything the summary, the detail log and run.json report."""

    settings: EffectiveSettings
    query_count: int
    sample_count: int
    samples_failed: int
    samples_missing: int
    failure_reasons: dict[str, int]
    latency: LatencyStats | None
    query_latency: LatencyStats | None
    ttft: LatencyStats | None
    tpot: LatencyStats | None
    token_count: int
    final_scheduled_s: float
    final_issued_s: float
    final_done_s: float
    max_latency_s: float
    overlatency_count: int
    issue_lateness: LatencyStats | None
    early_stopping: EarlyStoppingResult | None
    es_ttft: EarlyStoppingResult | None
    es_tpot: EarlyStoppingResult | None
    min_duration_met: bool
    min_queries_met: bool
    perf_constraints_met: bool
    perf_recommendation: str
    min_duration_recommendation: str
    errors: Counter[str]
    warnings: list[str]

    @property
    def scenario(self) -> Scenario:
        return self.settings.scenario

    @property
    def early_stopping_met(self) -> bool:
        parts = [self.early_stopping, self.es_ttft, self.es_tpot]
        return all(p.ok for p in parts if p is not None)

    @property
    def loadgen_valid(self) -> bool:
        """LoadGen's own verdict (what ``Result is :`` says in LoadGen)."""
        return (
            self.min_duration_met
            and self.min_queries_met
            and self.perf_constraints_met
            and self.early_stopping_met
        )

    @property
    def loadgen_invalid_reason(self) -> str:
        """LoadGen's ``result_invalid_reason`` text (it leaves early stopping out)."""
        text = ""
        if not self.perf_constraints_met:
            text += self.perf_recommendation + " "
        if not self.min_duration_met:
            text += self.min_duration_recommendation + " "
        if not self.min_queries_met:
            text += "The test exited early, before enough queries were issued."
        return text

    @property
    def valid(self) -> bool:
        return self.loadgen_valid and not self.errors and not self.samples_failed

    @property
    def reasons(self) -> list[str]:
        """Why the run is INVALID, one line each; empty when VALID."""
        out = []
        if not self.perf_constraints_met:
            out.append(self.perf_recommendation)
        if not self.min_duration_met:
            out.append(self.min_duration_recommendation)
        if not self.min_queries_met:
            out.append("The test exited early, before enough queries were issued.")
        for part, name in (
            (self.early_stopping, ""),
            (self.es_ttft, "TTFT "),
            (self.es_tpot, "TPOT "),
        ):
            if part is not None and not part.ok:
                out.append(
                    f"{name}early stopping: "
                    + " ".join(line.strip(" *") for line in part.text.splitlines())
                )
        if self.samples_failed:
            detail = "; ".join(f"{n} x {r}" for r, n in self.failure_reasons.items())
            out.append(f"{self.samples_failed} samples failed: {detail}")
        out.extend(f"ERROR: {message}" for message in self.errors)
        return out

    # -- headline metrics (LoadGen formulas) ----------------------------------------
    @property
    def samples_per_second(self) -> float:
        """Offline: samples / max latency."""
        return self.sample_count / self.max_latency_s if self.max_latency_s else 0.0

    @property
    def completed_samples_per_second(self) -> float:
        """Server: (samples - 1) / time the last issued query completed."""
        return _rate(self.sample_count - 1, self.final_done_s)

    @property
    def scheduled_samples_per_second(self) -> float:
        return _rate(self.sample_count - 1, self.final_scheduled_s)

    @property
    def qps_with_loadgen_overhead(self) -> float:
        return _rate(self.sample_count - 1, self.final_issued_s)

    @property
    def qps_without_loadgen_overhead(self) -> float:
        return (
            NS_PER_S / self.latency.mean if self.latency and self.latency.mean else 0.0
        )

    @property
    def tokens_per_second(self) -> float:
        """Offline: tokens / max latency; Server: tokens / last query completion."""
        if self.scenario is Scenario.OFFLINE:
            return _rate(self.token_count, self.max_latency_s)
        return _rate(self.token_count, self.final_done_s)


def _rate(count: float, seconds: float) -> float:
    # LoadGen's ``samples - 1`` is -1 when nothing completed: no rate is 0, never less.
    return max(0.0, count) / seconds if seconds > 0 else 0.0


def summarize(phase: PhaseResult, settings: EffectiveSettings) -> Summary:
    """Compute every metric and the verdict of a performance phase."""
    rec = phase.records
    n = phase.samples_issued
    origin = sample_origins(phase)
    completed = rec.completed_ns[:n]
    status = rec.status[:n]
    ok = (completed != UNSET) & (status == STATUS_OK)
    latencies = completed - origin
    if not ok.all():
        latencies = latencies[ok]
    errors = Counter(phase.errors)
    token = _token_series(phase, settings, origin, ok, errors)
    q_last = phase.queries_issued - 1
    final_done_ns = _final_query_done(phase, q_last)
    target_p = settings.target_latency_percentile
    lat = LatencyStats.of(latencies, target_p, owned=True)
    summary = Summary(
        settings=settings,
        query_count=phase.queries_issued,
        sample_count=int(latencies.shape[0]),
        samples_failed=int(((completed != UNSET) & (status != STATUS_OK)).sum()),
        samples_missing=int((completed == UNSET).sum()),
        failure_reasons=_failure_reasons(rec.status_reasons, status),
        latency=lat,
        query_latency=_query_latencies(phase, target_p),
        ttft=LatencyStats.of(token[0], target_p) if token else None,
        tpot=LatencyStats.of(token[1], target_p) if token else None,
        token_count=int(rec.n_tokens[:n][ok].sum()) if settings.is_token_run else 0,
        final_scheduled_s=_seconds(int(phase.schedule.scheduled_ns[q_last]))
        if q_last >= 0
        else 0.0,
        final_issued_s=_seconds(int(phase.query_origin_ns[q_last]) - phase.start_ns)
        if q_last >= 0
        else 0.0,
        final_done_s=_seconds(final_done_ns - phase.start_ns),
        max_latency_s=_seconds(lat.max) if lat else 0.0,
        overlatency_count=int((latencies > settings.target_latency_ns).sum()),
        issue_lateness=_lateness(phase, origin, settings),
        early_stopping=None,
        es_ttft=None,
        es_tpot=None,
        min_duration_met=False,
        min_queries_met=False,
        perf_constraints_met=True,
        perf_recommendation="",
        min_duration_recommendation="",
        errors=errors,
        warnings=list(phase.warnings),
    )
    judge(summary)
    return summary


def _seconds(ns: int) -> float:
    return ns / NS_PER_S


def _final_query_done(phase: PhaseResult, q_last: int) -> int:
    """When the last issued query completed (LoadGen's end of a Server run).

    If it never did (the run ended on the completion timeout), the latest
    completion of any sample instead: never a time before the start.
    """
    if q_last < 0:
        return phase.start_ns
    s0, s1 = phase.schedule.sample_range(q_last, q_last + 1)
    done = phase.records.completed_ns[s0:s1]
    if (done != UNSET).all():
        return int(done.max())
    issued = phase.records.completed_ns[: phase.samples_issued]
    return max(phase.start_ns, int(issued.max()) if issued.shape[0] else UNSET)


def _failure_reasons(
    reasons: list[str], status: npt.NDArray[np.uint8]
) -> dict[str, int]:
    counts = np.bincount(status, minlength=len(reasons) + 1)
    return {
        reasons[k - 1]: int(counts[k]) for k in range(1, len(reasons) + 1) if counts[k]
    }


def _query_latencies(phase: PhaseResult, target_p: float) -> LatencyStats | None:
    if (
        phase.schedule.samples_per_query == 1
        or phase.schedule.query_offsets is not None
    ):
        return None
    q = phase.queries_issued
    spq = phase.schedule.samples_per_query
    done = phase.records.completed_ns[: q * spq].reshape(q, spq)
    if (done == UNSET).any():
        done = done[(done != UNSET).all(axis=1)]
        origin = phase.query_origin_ns[:q][
            (phase.records.completed_ns[: q * spq].reshape(q, spq) != UNSET).all(axis=1)
        ]
    else:
        origin = phase.query_origin_ns[:q]
    return LatencyStats.of(done.max(axis=1) - origin, target_p)


def sample_origins(phase: PhaseResult) -> I64:
    """Latency origin of each issued sample (a view when queries hold one sample)."""
    n = phase.samples_issued
    schedule = phase.schedule
    if schedule.samples_per_query == 1 and schedule.query_offsets is None:
        return phase.query_origin_ns[:n]
    return phase.query_origin_ns[schedule.query_of_samples()[:n]]


def _lateness(
    phase: PhaseResult, origin: I64, settings: EffectiveSettings
) -> LatencyStats | None:
    if settings.scenario is not Scenario.SERVER:
        return None
    late = phase.records.issued_ns[: phase.samples_issued] - origin
    return LatencyStats.of(late, 0.99, owned=True)


def _token_series(
    phase: PhaseResult,
    settings: EffectiveSettings,
    origin: I64,
    ok: npt.NDArray[np.bool_],
    errors: Counter[str],
) -> tuple[I64, I64] | None:
    """TTFT and TPOT per sample, and LoadGen's n_tokens / ordering errors."""
    if not settings.is_token_run:
        return None
    rec = phase.records
    n = phase.samples_issued
    n_tokens = rec.n_tokens[:n][ok]
    if (n_tokens == 0).any():
        errors[
            "n_tokens argument missing or attempted to record 0 as number of tokens"
        ] += int((n_tokens == 0).sum())
    if ((n_tokens < 0) | (n_tokens == 1)).any():
        errors["n_tokens must be greater than 1"] += int(
            ((n_tokens < 0) | (n_tokens == 1)).sum()
        )
    if settings.scenario is Scenario.OFFLINE:
        return None
    first = rec.first_token_ns[:n][ok]
    if (first == UNSET).any():
        errors[
            "Attempted to record a sample latency before it's first token latency"
        ] += int((first == UNSET).sum())
    has_first = first != UNSET
    ttft = (first - origin[ok])[has_first]
    latency = (rec.completed_ns[:n][ok] - origin[ok])[has_first]
    usable = n_tokens[has_first] > 1
    tpot = (latency - ttft)[usable] // (n_tokens[has_first][usable] - 1)
    return ttft, tpot
