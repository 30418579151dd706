"""``mlperf_log_summary.txt``: LoadGen's human-readable summary, line for line."""

from __future__ import annotations

from infermeter.loadgen.logs.text import cpp_default, fixed2, grid_label, percent_label
from infermeter.loadgen.settings import Scenario
from infermeter.loadgen.summary import PERCENTILES, LatencyStats, Summary

RULE = "================================================"


def render_summary(
    summary: Summary, *, sut_name: str, warnings: int, errors: int
) -> str:
    """The whole summary file of a performance run."""
    lines = [
        RULE,
        "MLPerf Results Summary",
        RULE,
        f"SUT name : {sut_name}",
        f"Scenario : {summary.scenario.value}",
        f"Mode     : {summary.settings.mode.value}",
    ]
    lines += _headline(summary)
    lines += _validity(summary)
    lines += ["", RULE, "Additional Stats", RULE]
    lines += _additional(summary)
    lines += ["", RULE, "Test Parameters Used", RULE]
    lines += _parameters(summary)
    return "\n".join(lines) + "\n" + render_counts(warnings, errors)


def render_counts(warnings: int, errors: int) -> str:
    """The closing warning and error counts (also the whole summary of accuracy runs)."""
    if warnings == 0:
        text = "\nNo warnings encountered during test.\n"
    elif warnings == 1:
        text = "\n1 warning encountered. See detailed log.\n"
    else:
        text = f"\n{warnings} warnings encountered. See detailed log.\n"
    if errors == 0:
        return text + "\nNo errors encountered during test.\n"
    if errors == 1:
        return text + "\n1 ERROR encountered. See detailed log.\n"
    return text + f"\n{errors} ERRORS encountered. See detailed log.\n"


def _target(stats: LatencyStats | None) -> int:
    return stats.target if stats is not None else 0


def _headline(s: Summary) -> list[str]:
    p = percent_label(s.settings.target_latency_percentile)
    token = s.settings.is_token_run
    if s.scenario is Scenario.SINGLE_STREAM:
        lines = [f"{p} percentile latency (ns) : {_target(s.latency)}"]
        if token:
            lines.append(f"{p} first token percentile latency (ns) : {_target(s.ttft)}")
        return lines
    if s.scenario is Scenario.MULTI_STREAM:
        lines = [f"{p} percentile latency (ns) : {_target(s.query_latency)}"]
        if token:
            lines.append(f"{p} first token percentile latency (ns) : {_target(s.ttft)}")
        return lines
    if s.scenario is Scenario.SERVER:
        lines = [
            f"Completed samples per second    : {fixed2(s.completed_samples_per_second)}"
        ]
        if token:
            lines.append(f"Completed tokens per second: {fixed2(s.tokens_per_second)}")
        return lines
    lines = [f"Samples per second: {cpp_default(s.samples_per_second)}"]
    if token:
        lines.append(f"Tokens per second: {cpp_default(s.tokens_per_second)}")
    return lines


def _yes(flag: bool) -> str:
    return "Yes" if flag else "NO"


def _validity(s: Summary) -> list[str]:
    lines = [f"Result is : {'VALID' if s.valid else 'INVALID'}"]
    if s.scenario is Scenario.SERVER:
        lines.append(
            f"  Performance constraints satisfied : {_yes(s.perf_constraints_met)}"
        )
    lines += [
        f"  Min duration satisfied : {_yes(s.min_duration_met)}",
        f"  Min queries satisfied : {_yes(s.min_queries_met)}",
        f"  Early stopping satisfied: {_yes(s.early_stopping_met)}",
    ]
    if not s.valid:
        lines.append("Recommendations:")
        if not s.perf_constraints_met:
            lines.append(" * " + s.perf_recommendation)
        if not s.min_duration_met:
            lines.append(" * " + s.min_duration_recommendation)
        if not s.min_queries_met:
            lines.append(
                " * The test exited early, before enough queries were issued.\n"
                "   See the detailed log for why this may have occurred."
            )
        # infermeter's own reasons (failed samples, errors) come after LoadGen's.
        lines += [
            " * " + r
            for r in s.reasons
            if r.startswith(("ERROR", f"{s.samples_failed} "))
        ]
    if s.scenario is not Scenario.OFFLINE:
        if s.early_stopping is not None:
            lines += ["Early Stopping Result:", s.early_stopping.text]
        if s.es_ttft is not None and s.es_tpot is not None:
            lines += [
                "TTFT Early Stopping Result:",
                s.es_ttft.text,
                "TPOT Early Stopping Result:",
                s.es_tpot.text,
            ]
    return lines


def _stats_block(stats: LatencyStats | None, name: str, grid_name: str) -> list[str]:
    """Min/Max/Mean padded as LoadGen's literals are, then the percentile grid."""
    if stats is None:
        return []
    width = len(f"Min {name} (ns)") + 16
    lines = [
        f"Min {name} (ns)".ljust(width) + f": {stats.min}",
        f"Max {name} (ns)".ljust(width) + f": {stats.max}",
        f"Mean {name} (ns)".ljust(width) + f": {stats.mean}",
    ]
    lines += [
        f"{grid_label(p)} percentile {grid_name} (ns)   : {stats.percentiles[p]}"
        for p in PERCENTILES
    ]
    return lines


def _additional(s: Summary) -> list[str]:
    lines: list[str] = []
    if s.scenario is Scenario.SINGLE_STREAM:
        lines += [
            f"QPS w/ loadgen overhead         : {fixed2(s.qps_with_loadgen_overhead)}",
            f"QPS w/o loadgen overhead        : {fixed2(s.qps_without_loadgen_overhead)}",
            "",
        ]
    elif s.scenario is Scenario.SERVER:
        lines.append(
            f"Scheduled samples per second : {fixed2(s.scheduled_samples_per_second)}"
        )
    if s.scenario is Scenario.MULTI_STREAM:
        lines.append("Per-query latency:  ")
        lines += _stats_block(s.query_latency, "latency", "latency")
    else:
        lines += _stats_block(s.latency, "latency", "latency")
    if not s.settings.is_token_run:
        return lines
    lines.append("")
    if s.scenario is Scenario.SINGLE_STREAM:
        lines += _token_rates(s)
    if s.scenario is Scenario.SERVER:
        lines.append(
            "Completed tokens per second".ljust(44) + f": {fixed2(s.tokens_per_second)}"
        )
    if s.scenario is not Scenario.OFFLINE:
        lines += _stats_block(s.ttft, "First Token latency", "first token latency")
        lines.append("")
        lines += _stats_block(s.tpot, "Time per Output Token", "time to output token")
    return lines


def _token_rates(s: Summary) -> list[str]:
    """SingleStream token rates, with and without LoadGen's overhead."""
    with_overhead = s.token_count / s.final_issued_s if s.final_issued_s else 0.0
    mean_s = s.latency.mean / 1e9 if s.latency is not None else 0.0
    busy_s = mean_s * s.sample_count
    without = s.token_count / busy_s if busy_s else 0.0
    return [
        f"TPS w/ loadgen overhead         : {fixed2(with_overhead)}",
        f"TPS w/o loadgen overhead        : {fixed2(without)}",
    ]


def _parameters(s: Summary) -> list[str]:
    cfg = s.settings
    req = cfg.requested
    lines = [
        f"samples_per_query : {cfg.samples_per_query}",
        f"target_qps : {cpp_default(cfg.target_qps)}",
    ]
    if cfg.is_token_run:
        lines += [
            f"ttft_latency (ns): {req.ttft_latency}",
            f"tpot_latency (ns): {req.tpot_latency}",
        ]
    else:
        lines.append(f"target_latency (ns): {cfg.target_latency_ns}")
    lines += [
        f"max_async_queries : {cfg.max_async_queries}",
        f"min_duration (ms): {cfg.min_duration_ms}",
        f"max_duration (ms): {cfg.max_duration_ms}",
        f"min_query_count : {cfg.min_query_count}",
        f"max_query_count : {cfg.max_query_count}",
        f"qsl_rng_seed : {cfg.qsl_rng_seed}",
        f"sample_index_rng_seed : {cfg.sample_index_rng_seed}",
        f"schedule_rng_seed : {cfg.schedule_rng_seed}",
        f"accuracy_log_rng_seed : {req.accuracy_log_rng_seed}",
        f"accuracy_log_probability : {cpp_default(req.accuracy_log_probability)}",
        f"accuracy_log_sampling_target : {req.accuracy_log_sampling_target}",
        f"print_timestamps : {int(req.print_timestamps)}",
        f"performance_issue_unique : {int(req.performance_issue_unique)}",
        f"performance_issue_same : {int(req.performance_issue_same)}",
        f"performance_issue_same_index : {req.performance_issue_same_index}",
        f"performance_sample_count : {cfg.performance_sample_count}",
        f"accuracy_sample_count : {cfg.accuracy_sample_count}",
    ]
    if req.sample_concatenate_permutation:
        lines += [
            "WARNING: sample_concatenate_permutation was set to true. ",
            "Generated samples per query might be different as the one in the setting.",
            "Check the generated_samples_per_query line in the detailed log for the real",
            "samples_per_query value",
        ]
    return lines
