"""Run settings: every MLPerf TestSettings field, and the effective values derived from them.

``RunSettings`` mirrors the official ``TestSettings`` field for field (same names
and defaults, spec section 1.4) so that conf files and the compatibility layer
map one to one. ``EffectiveSettings`` is what the engine runs with, derived the
way LoadGen derives ``TestSettingsInternal``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass

from infermeter.errors import ConfigError

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
OFFLINE_SLACK = (
    1.1  # LoadGen generates 10 % more Offline samples than min_duration needs
)


class Scenario(enum.Enum):
    """MLPerf scenarios (Interactive is a Server run with interactive limits)."""

    SINGLE_STREAM = "SingleStream"
    MULTI_STREAM = "MultiStream"
    SERVER = "Server"
    OFFLINE = "Offline"

    @classmethod
    def parse(cls, text: str) -> Scenario:
        key = text.replace("_", "").replace("-", "").lower()
        for member in cls:
            if member.value.lower() == key:
                return member
        known = ", ".join(m.value for m in cls)
        raise ConfigError(f"Unknown scenario {text!r}. Known scenarios: {known}.")


class Mode(enum.Enum):
    """MLPerf test modes (config-file values 0..3 in this order)."""

    SUBMISSION_RUN = "SubmissionRun"
    ACCURACY_ONLY = "AccuracyOnly"
    PERFORMANCE_ONLY = "PerformanceOnly"
    FIND_PEAK_PERFORMANCE = "FindPeakPerformance"

    @classmethod
    def parse(cls, text: str) -> Mode:
        key = text.replace("_", "").replace("-", "").lower()
        for member in cls:
            if member.value.lower() == key:
                return member
        known = ", ".join(m.value for m in cls)
        raise ConfigError(f"Unknown mode {text!r}. Known modes: {known}.")


@dataclass(slots=True)
class RunSettings:
    """The requested settings; names and defaults of LoadGen's TestSettings."""

    scenario: Scenario = Scenario.SINGLE_STREAM
    mode: Mode = Mode.PERFORMANCE_ONLY
    single_stream_expected_latency_ns: int = 1_000_000
    single_stream_target_latency_percentile: float = 0.90
    multi_stream_expected_latency_ns: int = 8_000_000
    multi_stream_target_latency_percentile: float = 0.99
    multi_stream_samples_per_query: int = 8
    server_target_qps: float = 1.0
    server_target_latency_ns: int = 100_000_000
    server_target_latency_percentile: float = 0.99
    server_coalesce_queries: bool = False
    server_find_peak_qps_decimals_of_precision: int = 1
    server_find_peak_qps_boundary_step_size: float = 1.0
    server_max_async_queries: int = 0
    server_num_issue_query_threads: int = 0
    offline_expected_qps: float = 1.0
    sample_concatenate_permutation: bool = False
    min_duration_ms: int = 10_000
    max_duration_ms: int = 0
    min_query_count: int = 100
    max_query_count: int = 0
    qsl_rng_seed: int = 0
    sample_index_rng_seed: int = 0
    schedule_rng_seed: int = 0
    accuracy_log_rng_seed: int = 0
    accuracy_log_probability: float = 0.0
    accuracy_log_sampling_target: int = 0
    test05: bool = False
    test05_qsl_rng_seed: int = 0
    test05_sample_index_rng_seed: int = 0
    test05_schedule_rng_seed: int = 0
    print_timestamps: bool = False
    performance_issue_unique: bool = False
    performance_issue_same: bool = False
    performance_issue_same_index: int = 0
    performance_sample_count_override: int = 0
    accuracy_sample_count_override: int = 0
    use_token_latencies: bool = False
    ttft_latency: int = 100_000_000
    tpot_latency: int = 100_000_000
    infer_token_latencies: bool = False
    token_latency_scaling_factor: int = 0
    # infermeter additions (not in LoadGen):
    # end the run with an INVALID reason when no sample completes for this long.
    completion_timeout_ns: int = 120 * NS_PER_S

    def copy(self, **changes: object) -> RunSettings:
        """A modified copy (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def validate(self) -> None:
        """Reject settings no run can satisfy, with one line naming the fix."""
        _check(
            self.server_target_qps > 0 or self.scenario is not Scenario.SERVER,
            f"server_target_qps must be > 0 (got {self.server_target_qps}); "
            "pass a positive --target-qps",
        )
        _check(
            self.offline_expected_qps > 0 or self.scenario is not Scenario.OFFLINE,
            f"offline_expected_qps must be > 0 (got {self.offline_expected_qps}); "
            "pass a positive --target-qps",
        )
        for name in (
            "single_stream_expected_latency_ns",
            "multi_stream_expected_latency_ns",
            "multi_stream_samples_per_query",
        ):
            value = getattr(self, name)
            _check(value > 0, f"{name} must be > 0 (got {value})")
        for name in (
            "min_duration_ms",
            "max_duration_ms",
            "min_query_count",
            "max_query_count",
            "server_max_async_queries",
            "performance_sample_count_override",
            "accuracy_sample_count_override",
        ):
            value = getattr(self, name)
            _check(value >= 0, f"{name} must be >= 0 (got {value})")
        for name in (
            "single_stream_target_latency_percentile",
            "multi_stream_target_latency_percentile",
            "server_target_latency_percentile",
        ):
            value = getattr(self, name)
            _check(0.0 < value < 1.0, f"{name} must be between 0 and 1 (got {value})")
        _check(
            0.0 <= self.accuracy_log_probability <= 1.0,
            f"accuracy_log_probability must be in [0, 1] "
            f"(got {self.accuracy_log_probability})",
        )
        _check(
            not (self.performance_issue_unique and self.performance_issue_same),
            "performance_issue_unique and performance_issue_same cannot both be set",
        )
        _check(
            not (self.max_duration_ms and self.max_duration_ms < self.min_duration_ms),
            f"max_duration_ms ({self.max_duration_ms}) is below min_duration_ms "
            f"({self.min_duration_ms}): the run could never be valid; raise "
            "--max-duration or lower --min-duration",
        )
        _check(
            not (self.max_query_count and self.max_query_count < self.min_query_count),
            f"max_query_count ({self.max_query_count}) is below min_query_count "
            f"({self.min_query_count}): the run could never be valid",
        )
        _check(
            self.completion_timeout_ns > 0,
            f"completion timeout must be > 0 (got {self.completion_timeout_ns} ns)",
        )


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


@dataclass(frozen=True, slots=True)
class EffectiveSettings:
    """What the engine runs with (LoadGen's TestSettingsInternal)."""

    requested: RunSettings
    scenario: Scenario
    mode: Mode
    samples_per_query: int
    target_qps: float
    target_latency_ns: int
    target_latency_percentile: float
    max_async_queries: int
    target_duration_ms: int
    min_duration_ms: int
    max_duration_ms: int
    min_query_count: int
    max_query_count: int
    min_sample_count: int
    performance_sample_count: int
    accuracy_sample_count: int
    qsl_rng_seed: int
    sample_index_rng_seed: int
    schedule_rng_seed: int

    @property
    def is_token_run(self) -> bool:
        return self.requested.use_token_latencies


def effective_settings(
    requested: RunSettings, *, qsl_total_count: int, qsl_performance_count: int
) -> EffectiveSettings:
    """Derive the effective settings the way LoadGen does (``test_settings_internal.cc``)."""
    requested.validate()
    r = requested
    scenario = r.scenario
    # Logged as set, like LoadGen 6.0.17 (the submission checker compares the
    # override with the benchmark's count); the loadable sets are cut from at
    # most the QSL's samples (schedule.generate_loadable_sets).
    performance_sample_count = (
        r.performance_sample_count_override or qsl_performance_count
    )
    accuracy_sample_count = r.accuracy_sample_count_override or qsl_total_count
    samples_per_query = 1
    max_async = 0
    target_latency_ns = 0
    min_query_count = r.min_query_count
    target_duration_ms = r.min_duration_ms
    if scenario is Scenario.SINGLE_STREAM:
        target_qps = NS_PER_S / r.single_stream_expected_latency_ns
        max_async = 1
        percentile = r.single_stream_target_latency_percentile
    elif scenario is Scenario.MULTI_STREAM:
        target_qps = NS_PER_S / r.multi_stream_expected_latency_ns
        max_async = 1
        percentile = r.multi_stream_target_latency_percentile
        samples_per_query = r.multi_stream_samples_per_query
    elif scenario is Scenario.SERVER:
        target_qps = r.server_target_qps
        target_latency_ns = r.server_target_latency_ns
        percentile = r.server_target_latency_percentile
        max_async = r.server_max_async_queries
    else:
        target_qps = r.offline_expected_qps
        percentile = 0.99
        max_async = 1
        target_sample_count = math.floor(
            OFFLINE_SLACK * (r.min_duration_ms / 1000) * target_qps
        )
        # LoadGen 6.0.17 sizes the query by the sample count for unique issue
        # only; performance_issue_same keeps the regular size. (Its unique issue
        # crashes past the QSL's size; here the query is capped at it.)
        if r.performance_issue_unique:
            samples_per_query = min(performance_sample_count, qsl_total_count)
        else:
            samples_per_query = max(min_query_count, target_sample_count)
        min_query_count = 1
        target_duration_ms = 0
    return EffectiveSettings(
        requested=r,
        scenario=scenario,
        mode=r.mode,
        samples_per_query=samples_per_query,
        target_qps=target_qps,
        target_latency_ns=target_latency_ns,
        target_latency_percentile=percentile,
        max_async_queries=max_async,
        target_duration_ms=target_duration_ms,
        min_duration_ms=r.min_duration_ms,
        max_duration_ms=r.max_duration_ms,
        min_query_count=min_query_count,
        max_query_count=r.max_query_count,
        min_sample_count=min_query_count * samples_per_query,
        performance_sample_count=performance_sample_count,
        accuracy_sample_count=accuracy_sample_count,
        qsl_rng_seed=r.test05_qsl_rng_seed if r.test05 else r.qsl_rng_seed,
        sample_index_rng_seed=(
            r.test05_sample_index_rng_seed if r.test05 else r.sample_index_rng_seed
        ),
        schedule_rng_seed=r.test05_schedule_rng_seed
        if r.test05
        else r.schedule_rng_seed,
    )
