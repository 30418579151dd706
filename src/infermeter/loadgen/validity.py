"""Validity of a run: min duration, min queries, the Server constraint and early stopping.

LoadGen's ``results.cc`` rules (spec sections 2.3 and 2.4), applied to a
``Summary`` whose metrics are already computed; the texts are LoadGen's.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from infermeter.loadgen import early_stopping as es
from infermeter.loadgen.settings import NS_PER_MS, NS_PER_S, Scenario
from infermeter.loadgen.summary import EarlyStoppingResult, LatencyStats, Summary

I64 = npt.NDArray[np.int64]


def judge(s: Summary) -> None:
    """Min duration, min queries, the Server constraint and early stopping."""
    cfg = s.settings
    min_duration_s = cfg.min_duration_ms * NS_PER_MS / NS_PER_S
    if cfg.scenario is Scenario.OFFLINE:
        s.min_duration_met = s.max_latency_s >= min_duration_s
        s.min_duration_recommendation = (
            "Increase expected QPS so the loadgen pre-generates a larger "
            "(coalesced) query."
        )
    elif cfg.scenario is Scenario.SERVER:
        s.min_duration_met = s.final_scheduled_s >= min_duration_s
        s.min_duration_recommendation = (
            "Increase the target QPS so the loadgen pre-generates more queries."
        )
    else:
        s.min_duration_met = s.final_issued_s >= min_duration_s
        s.min_duration_recommendation = (
            "Decrease the expected latency so the loadgen pre-generates more queries."
        )
    s.min_queries_met = (
        s.query_count >= cfg.min_query_count and s.sample_count >= cfg.min_sample_count
    )
    _judge_constraints(s)
    _judge_early_stopping(s)


def _judge_constraints(s: Summary) -> None:
    cfg = s.settings
    if cfg.scenario is not Scenario.SERVER:
        return
    req = cfg.requested
    if s.sample_count == 0:
        # Nothing completed: no latency met its bound (LoadGen never sees a
        # failed sample, so it has no text for this; ours says what happened).
        s.perf_constraints_met = False
        s.perf_recommendation = "No sample completed: no latency bound was met."
        return
    if not cfg.is_token_run:
        if s.latency is not None and s.latency.target > cfg.target_latency_ns:
            s.perf_constraints_met = False
            s.perf_recommendation = "Reduce target QPS to improve latency."
        return
    notes = []
    if s.ttft is not None and s.ttft.target > req.ttft_latency:
        notes.append("TTFT constrain not met: Reduce target QPS to improve latency.")
    if s.tpot is not None and s.tpot.target > req.tpot_latency:
        notes.append("TPOT constrain not met: Reduce target QPS to improve latency.")
    if notes:
        s.perf_constraints_met = False
        s.perf_recommendation = "\n * ".join(notes)


def _judge_early_stopping(s: Summary) -> None:
    cfg = s.settings
    if cfg.scenario is Scenario.OFFLINE:
        return
    p = cfg.target_latency_percentile
    if not cfg.is_token_run:
        series = s.query_latency if cfg.scenario is Scenario.MULTI_STREAM else s.latency
        s.early_stopping = _early_stop(s, series, cfg.target_latency_ns, p)
        return
    s.es_tpot = _early_stop(s, s.tpot, cfg.requested.tpot_latency, p)
    # LoadGen checks TTFT only when TPOT passed (``tpot && ttft``); a skipped
    # check leaves its result text empty.
    s.es_ttft = (
        _early_stop(s, s.ttft, cfg.requested.ttft_latency, p)
        if s.es_tpot.ok
        else EarlyStoppingResult(True, "")
    )


def _early_stop(
    s: Summary, series: LatencyStats | None, target_ns: int, p: float
) -> EarlyStoppingResult:
    n = s.query_count
    ordered = series.sorted_ns if series is not None else np.zeros(0, dtype=np.int64)
    if s.scenario is Scenario.SERVER:
        over = int((ordered > target_ns).sum())
        ok, more = es.server_check(n, over, p)
        if ok:
            return EarlyStoppingResult(True, " * Run successful.")
        return EarlyStoppingResult(
            False,
            (
                f" * Run unsuccessful.\n * Processed {n} queries.\n"
                f" * Would need to run at least {more} more queries,\n"
                " with the run being successful if every additional\n"
                " query were under latency."
            ),
        )
    return _stream_early_stop(s, ordered, p)


def _stream_early_stop(s: Summary, ordered: I64, p: float) -> EarlyStoppingResult:
    n = s.query_count
    need = es.min_queries_for(p)
    label = f"{p * 100:.1f}th"
    if n < need or ordered.shape[0] < n:
        return EarlyStoppingResult(
            False,
            (
                f" * Only processed {n} queries.\n"
                f" * Need to process at least {need} queries for early stopping."
            ),
        )
    est = es.stream_estimate(ordered[:n], p)
    estimate = est.estimate_ns or 0
    text = (
        f" * Processed at least {need} queries ({n}).\n"
        f" * Would discard {est.discard} highest latency queries.\n"
        f" * Early stopping {label} percentile estimate: {estimate}"
    )
    result = EarlyStoppingResult(True, text, estimate_ns=estimate)
    if s.scenario is Scenario.SINGLE_STREAM:
        need99 = es.min_queries_for(0.99)
        if n < need99:
            result.text += (
                "\n * Not enough queries processed for 99.0th percentile\n"
                " early stopping estimate (would need to process at\n"
                f" least {need99} total queries)."
            )
        else:
            est99 = es.stream_estimate(ordered[:n], 0.99)
            result.estimate_99_ns = est99.estimate_ns or 0
            estimate_99 = result.estimate_99_ns
            result.text += (
                f"\n * Early stopping 99.0th percentile estimate: {estimate_99}"
            )
    else:
        result.estimate_99_ns = estimate
    return result
