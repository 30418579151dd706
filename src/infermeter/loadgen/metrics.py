"""Metrics, early stopping and validity of a finished run: pure functions, ints in and out.

Follows LoadGen's ``results.cc`` (spec sections 2.3, 2.4 and 3): percentile =
``sorted[floor(n * p)]``, integer-ns means, TTFT from the scheduled time,
TPOT = ``(latency - ttft) // (n_tokens - 1)``. On top of LoadGen's rules an
infermeter verdict is also INVALID when samples failed, never completed, or
the run logged errors (completion timeout, double completion, ...).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.engine import PhaseResult
from infermeter.loadgen.records import STATUS_OK, UNSET
from infermeter.loadgen.settings import NS_PER_S, EffectiveSettings, Scenario
from infermeter.loadgen.summary import LatencyStats, Summary
from infermeter.loadgen.validity import judge

I64 = npt.NDArray[np.int64]


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
