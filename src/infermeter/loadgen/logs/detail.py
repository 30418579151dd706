"""``mlperf_log_detail.txt``: one ``:::MLLOG {json}`` line per key, in LoadGen's order."""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field

from infermeter.loadgen.logs.text import cpp_default, grid_label
from infermeter.loadgen.settings import (
    NS_PER_MS,
    EffectiveSettings,
    RunSettings,
    Scenario,
)
from infermeter.loadgen.summary import (
    PERCENTILES,
    EarlyStoppingResult,
    LatencyStats,
    Summary,
)

Value = str | int | float | bool | list[int] | dict[str, str]


def _json_value(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return cpp_default(value)
        return '"inf"' if value > 0 else '"-inf"'
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return json.dumps(value)


@dataclass
class DetailLog:
    """Entries of the detail log, stamped in ms since the log origin."""

    origin_ns: int
    lines: list[str] = field(default_factory=list)
    errors: int = 0
    warnings: int = 0

    def log(self, key: str, value: Value, now_ns: int, *, kind: str = "") -> None:
        is_error = kind == "error"
        is_warning = kind == "warning"
        self.errors += is_error
        self.warnings += is_warning
        meta = (
            f'{{"is_error": {_json_value(is_error)}, "is_warning": {_json_value(is_warning)}, '
            f'"file": "infermeter", "line_no": 0, "pid": {os.getpid()}, '
            f'"tid": {threading.get_native_id()}}}'
        )
        time_ms = max(0, now_ns - self.origin_ns) / NS_PER_MS
        self.lines.append(
            f':::MLLOG {{"key": {json.dumps(key)}, "value": {_json_value(value)}, '
            f'"time_ms": {time_ms:.6f}, "namespace": "mlperf::logging", '
            f'"event_type": "POINT_IN_TIME", "metadata": {meta}}}'
        )

    def log_many(self, entries: list[tuple[str, Value]], now_ns: int) -> None:
        for key, value in entries:
            self.log(key, value, now_ns)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def requested_entries(r: RunSettings) -> list[tuple[str, Value]]:
    """The ``requested_*`` keys LoadGen logs for this scenario."""
    out: list[tuple[str, Value]] = [
        ("requested_scenario", r.scenario.value),
        ("requested_test_mode", r.mode.value),
    ]
    # The expected-latency hints are doubles in LoadGen (logged as 1e+06).
    if r.scenario is Scenario.SINGLE_STREAM:
        out += [
            (
                "requested_single_stream_expected_latency_ns",
                float(r.single_stream_expected_latency_ns),
            ),
            (
                "requested_single_stream_target_latency_percentile",
                r.single_stream_target_latency_percentile,
            ),
        ]
    elif r.scenario is Scenario.MULTI_STREAM:
        out += [
            (
                "requested_multi_stream_expected_latency_ns",
                float(r.multi_stream_expected_latency_ns),
            ),
            (
                "requested_multi_stream_target_latency_percentile",
                r.multi_stream_target_latency_percentile,
            ),
            (
                "requested_multi_stream_samples_per_query",
                r.multi_stream_samples_per_query,
            ),
        ]
    elif r.scenario is Scenario.SERVER:
        out += [
            (f"requested_{k}", getattr(r, k))
            for k in (
                "server_target_qps",
                "server_target_latency_ns",
                "server_target_latency_percentile",
                "server_coalesce_queries",
                "server_find_peak_qps_decimals_of_precision",
                "server_find_peak_qps_boundary_step_size",
                "server_max_async_queries",
                "server_num_issue_query_threads",
            )
        ]
    else:
        out.append(("requested_offline_expected_qps", r.offline_expected_qps))
    out += [
        (f"requested_{k}", getattr(r, k))
        for k in (
            "min_duration_ms",
            "max_duration_ms",
            "min_query_count",
            "max_query_count",
            "qsl_rng_seed",
            "sample_index_rng_seed",
            "schedule_rng_seed",
            "accuracy_log_rng_seed",
            "accuracy_log_probability",
            "accuracy_log_sampling_target",
            "print_timestamps",
            "performance_issue_unique",
            "performance_issue_same",
            "performance_issue_same_index",
            "performance_sample_count_override",
            "accuracy_sample_count_override",
            "sample_concatenate_permutation",
        )
    ]
    if r.use_token_latencies:
        out += [("requested_use_token_latencies", True)]
        if r.scenario is not Scenario.OFFLINE:
            out += [
                ("requested_server_ttft_latency", r.ttft_latency),
                ("requested_server_tpot_latency", r.tpot_latency),
            ]
    if r.infer_token_latencies:
        out += [
            ("requested_infer_token_latencies", r.infer_token_latencies),
            ("requested_token_latency_scaling_factor", r.token_latency_scaling_factor),
        ]
    return out


def effective_entries(e: EffectiveSettings) -> list[tuple[str, Value]]:
    """The ``effective_*`` keys."""
    r = e.requested
    return [
        ("effective_scenario", e.scenario.value),
        ("effective_test_mode", e.mode.value),
        ("effective_samples_per_query", e.samples_per_query),
        ("effective_target_qps", float(e.target_qps)),
        ("effective_target_latency_ns", e.target_latency_ns),
        ("effective_target_latency_percentile", e.target_latency_percentile),
        ("effective_max_async_queries", e.max_async_queries),
        ("effective_target_duration_ms", e.target_duration_ms),
        ("effective_min_duration_ms", e.min_duration_ms),
        ("effective_max_duration_ms", e.max_duration_ms),
        ("effective_min_query_count", e.min_query_count),
        ("effective_max_query_count", e.max_query_count),
        ("effective_min_sample_count", e.min_sample_count),
        ("effective_qsl_rng_seed", e.qsl_rng_seed),
        ("effective_sample_index_rng_seed", e.sample_index_rng_seed),
        ("effective_schedule_rng_seed", e.schedule_rng_seed),
        ("effective_accuracy_log_rng_seed", r.accuracy_log_rng_seed),
        ("effective_accuracy_log_probability", r.accuracy_log_probability),
        ("effective_accuracy_log_sampling_target", r.accuracy_log_sampling_target),
        ("effective_print_timestamps", r.print_timestamps),
        ("effective_performance_issue_unique", r.performance_issue_unique),
        ("effective_performance_issue_same", r.performance_issue_same),
        ("effective_performance_issue_same_index", r.performance_issue_same_index),
        ("effective_performance_sample_count", e.performance_sample_count),
        ("effective_accuracy_sample_count", e.accuracy_sample_count),
        ("effective_sample_concatenate_permutation", r.sample_concatenate_permutation),
    ]


def result_entries(s: Summary) -> list[tuple[str, Value]]:
    """The ``result_*`` and early-stopping keys of a performance phase."""
    out: list[tuple[str, Value]] = [
        ("result_validity", "VALID" if s.valid else "INVALID")
    ]
    if s.scenario is Scenario.SERVER:
        out.append(("result_perf_constraints_met", s.perf_constraints_met))
    out += [
        ("result_min_duration_met", s.min_duration_met),
        ("result_min_queries_met", s.min_queries_met),
        ("early_stopping_met", s.early_stopping_met),
    ]
    if not s.loadgen_valid:
        out.append(("result_invalid_reason", s.loadgen_invalid_reason))
    # Token runs log the TTFT/TPOT pair in every scenario (empty in Offline).
    if s.settings.is_token_run:
        out += [
            ("early_stopping_ttft_result", _es_text(s.es_ttft)),
            ("early_stopping_tpot_result", _es_text(s.es_tpot)),
        ]
    else:
        out.append(("early_stopping_result", _es_text(s.early_stopping)))
    out.append(("result_query_count", s.query_count))
    out += _scenario_results(s)
    out += _series("result_{}_latency_ns", "result_{}_percentile_latency_ns", s.latency)
    out += _token_results(s)
    return out


def _es_text(result: EarlyStoppingResult | None) -> str:
    return result.text.replace("\n", " ") if result is not None else ""


def _series(
    minmax: str, grid: str, stats: LatencyStats | None
) -> list[tuple[str, Value]]:
    if stats is None:
        return []
    out: list[tuple[str, Value]] = [
        (minmax.format("min"), stats.min),
        (minmax.format("max"), stats.max),
        (minmax.format("mean"), stats.mean),
    ]
    out += [(grid.format(grid_label(p)), stats.percentiles[p]) for p in PERCENTILES]
    return out


def _scenario_results(s: Summary) -> list[tuple[str, Value]]:
    if s.scenario is Scenario.SINGLE_STREAM:
        es = s.early_stopping
        return [
            ("result_qps_with_loadgen_overhead", s.qps_with_loadgen_overhead),
            ("result_qps_without_loadgen_overhead", s.qps_without_loadgen_overhead),
            ("early_stopping_latency_ss", es.estimate_ns if es else 0),
            ("early_stopping_latency_ms", es.estimate_99_ns if es else 0),
        ]
    if s.scenario is Scenario.MULTI_STREAM:
        es = s.early_stopping
        per_query = _series(
            "result_{}_query_latency_ns",
            "result_{}_percentile_per_query_latency_ns",
            s.query_latency,
        )
        return [*per_query, ("early_stopping_latency_ms", es.estimate_ns if es else 0)]
    if s.scenario is Scenario.SERVER:
        return [
            ("result_overlatency_query_count", s.overlatency_count),
            ("result_scheduled_samples_per_sec", s.scheduled_samples_per_second),
            ("result_completed_samples_per_sec", s.completed_samples_per_second),
        ]
    return [("result_samples_per_second", s.samples_per_second)]


def _token_results(s: Summary) -> list[tuple[str, Value]]:
    if not s.settings.is_token_run:
        return []
    out: list[tuple[str, Value]] = []
    if s.scenario is not Scenario.OFFLINE:
        out += _series(
            "result_first_token_{}_latency_ns",
            "result_first_token_{}_percentile_latency_ns",
            s.ttft,
        )
        out += _token_throughput(s)
        out += _series(
            "result_time_to_output_token_{}",
            "result_time_per_output_token_{}_percentile_ns",
            s.tpot,
        )
    if s.scenario is Scenario.OFFLINE:
        out.append(("result_tokens_per_second", s.tokens_per_second))
    else:
        out.append(("result_completed_tokens_per_second", s.tokens_per_second))
    return out


def _token_throughput(s: Summary) -> list[tuple[str, Value]]:
    """LoadGen's two token-throughput keys, its unit quirk included.

    ``result_token_throughput`` divides tokens by ``mean latency (ns) x samples``
    without converting ns to s, as LoadGen 6.0.17 does; parsers that read it
    get the same (odd) number from both engines.
    """
    with_overhead = s.token_count / s.final_issued_s if s.final_issued_s else 0.0
    mean = s.latency.mean if s.latency is not None else 0
    quirk = s.token_count / (mean * s.sample_count) if mean and s.sample_count else 0.0
    return [
        ("result_token_throughput_with_loadgen_overhead", with_overhead),
        ("result_token_throughput", quirk),
    ]


def generated_entries(
    query_count: int, samples_per_query: int, duration_ns: int
) -> list[tuple[str, Value]]:
    return [
        ("generated_query_count", query_count),
        ("generated_samples_per_query", samples_per_query),
        ("generated_query_duration", duration_ns),
    ]
