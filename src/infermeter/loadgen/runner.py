"""A whole LoadGen test: modes (performance, accuracy, submission, find-peak) over run phases.

``run_test`` is the engine's public entry point: it loads sample sets, builds
schedules, runs phases, judges them and keeps what the log files need.
``write_logs`` then writes the MLPerf log files.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock, MonotonicClock
from infermeter.errors import ConfigError
from infermeter.loadgen.budget import check_phase_memory
from infermeter.loadgen.engine import PhaseResult, PhaseWatcher, Progress, run_phase
from infermeter.loadgen.find_peak import find_peak
from infermeter.loadgen.interfaces import QuerySampleLibrary, SystemUnderTest
from infermeter.loadgen.logs.accuracy import AccuracyEntry
from infermeter.loadgen.logs.detail import (
    DetailLog,
    effective_entries,
    generated_entries,
    requested_entries,
    result_entries,
)
from infermeter.loadgen.metrics import summarize
from infermeter.loadgen.rng import MT19937Stream
from infermeter.loadgen.schedule import generate_loadable_sets, generate_queries
from infermeter.loadgen.settings import (
    EffectiveSettings,
    Mode,
    RunSettings,
    Scenario,
    effective_settings,
)
from infermeter.loadgen.stop import StopSignal
from infermeter.loadgen.summary import Summary
from infermeter.version import __version__

ENGINE_NAME = "infermeter native engine"
PhaseHook = Callable[[str], None]


@dataclass
class RunOutcome:
    """What a test produced; ``summary`` is the performance verdict (None in accuracy mode)."""

    settings: EffectiveSettings
    detail: DetailLog
    sut_name: str
    started_at: dt.datetime
    summary: Summary | None = None
    performance: PhaseResult | None = None
    accuracy_phases: list[PhaseResult] = field(default_factory=list)
    accuracy_entries: list[AccuracyEntry] = field(default_factory=list)
    loaded_qsl_set: list[int] = field(default_factory=list)
    peak_trials: list[tuple[float, bool]] = field(default_factory=list)
    interrupted: str | None = None  # the stop's run error, when a StopSignal ended it

    @property
    def valid(self) -> bool | None:
        if self.summary is None:
            return None if self.detail.errors == 0 else False
        return self.summary.valid and self.detail.errors == 0


@dataclass
class _Context:
    sut: SystemUnderTest
    qsl: QuerySampleLibrary
    clock: Clock
    outcome: RunOutcome
    progress: Progress | None
    on_phase: PhaseHook | None
    next_seq: int = 0
    stop: StopSignal | None = None
    watcher: PhaseWatcher | None = None

    @property
    def stopped(self) -> bool:
        return self.outcome.interrupted is not None


class _Stopped(Exception):
    """A stop ended a find-peak trial; the search ends with it."""


def run_test(
    sut: SystemUnderTest,
    qsl: QuerySampleLibrary,
    settings: RunSettings,
    *,
    clock: Clock | None = None,
    progress: Progress | None = None,
    on_phase: PhaseHook | None = None,
    stop: StopSignal | None = None,
    watcher: PhaseWatcher | None = None,
    warnings: Sequence[str] = (),
) -> RunOutcome:
    """Run one LoadGen test in the mode ``settings.mode`` asks for.

    ``stop`` ends the running phase early, INVALID with its reason (the
    phases after it are skipped). ``watcher`` sees each performance phase
    while it runs (the records journal). ``warnings`` are logged before the
    settings, where LoadGen logs what it found before the test (the
    audit.config notice).
    """
    clock = clock or MonotonicClock()
    if (
        settings.mode is Mode.FIND_PEAK_PERFORMANCE
        and settings.scenario is not Scenario.SERVER
    ):
        raise ConfigError(
            "FindPeakPerformance needs the Server scenario "
            f"(got {settings.scenario.value}); pass --scenario Server or another --mode"
        )
    eff = effective_settings(
        settings,
        qsl_total_count=qsl.total_sample_count,
        qsl_performance_count=qsl.performance_sample_count,
    )
    check_phase_memory(_with_mode(eff, Mode.PERFORMANCE_ONLY))
    detail = DetailLog(origin_ns=clock.now_ns())
    outcome = RunOutcome(
        eff,
        detail,
        getattr(sut, "name", type(sut).__name__),
        dt.datetime.now(dt.UTC),
    )
    ctx = _Context(
        sut, qsl, clock, outcome, progress, on_phase, stop=stop, watcher=watcher
    )
    _log_header(ctx, eff, warnings)
    if settings.mode in (Mode.ACCURACY_ONLY, Mode.SUBMISSION_RUN):
        _accuracy(ctx, _with_mode(eff, Mode.ACCURACY_ONLY))
    if (
        settings.mode in (Mode.PERFORMANCE_ONLY, Mode.SUBMISSION_RUN)
        and not ctx.stopped
    ):
        _performance(ctx, _with_mode(eff, Mode.PERFORMANCE_ONLY), final=True)
    if settings.mode is Mode.FIND_PEAK_PERFORMANCE:
        _find_peak(ctx, _with_mode(eff, Mode.PERFORMANCE_ONLY))
    if outcome.summary is not None:  # LoadGen writes it with the performance results
        detail.log("num_errors", detail.errors, clock.now_ns())
    return outcome


def _with_mode(eff: EffectiveSettings, mode: Mode) -> EffectiveSettings:
    return dataclasses.replace(eff, mode=mode)


def _log_header(ctx: _Context, eff: EffectiveSettings, warnings: Sequence[str]) -> None:
    log = ctx.outcome.detail
    now = ctx.clock.now_ns()
    log.log("loadgen_version", f"{__version__} @ {ENGINE_NAME}", now)
    log.log("loadgen_file_sha1", _engine_sha1s(), now)
    log.log("test_datetime", dt.datetime.now().strftime("%Y-%m-%dT%H:%M:%SZ"), now)
    log.log("sut_name", ctx.outcome.sut_name, now)
    log.log("qsl_name", getattr(ctx.qsl, "name", type(ctx.qsl).__name__), now)
    log.log("qsl_reported_total_count", ctx.qsl.total_sample_count, now)
    log.log("qsl_reported_performance_count", ctx.qsl.performance_sample_count, now)
    for message in warnings:
        log.log("warning_generic_message", message, now, kind="warning")
    for key, value in requested_entries(eff.requested) + effective_entries(eff):
        log.log(key, value, now)


def _engine_sha1s() -> dict[str, str]:
    here = Path(__file__).parent
    return {
        p.name: hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(here.glob("*.py"))
    }


def _run_set(
    ctx: _Context,
    eff: EffectiveSettings,
    indices: npt.NDArray[np.int64],
    distribution_end: int,
    log_mask_fn: Callable[[int, int], npt.NDArray[np.bool_] | None],
    label: str,
    *,
    watched: bool = False,
) -> PhaseResult:
    from infermeter.loadgen.schedule import LoadableSet

    log = ctx.outcome.detail
    loaded = LoadableSet(indices, distribution_end)
    ctx.qsl.load_samples(indices)
    log.log("loaded_qsl_set", indices.tolist(), ctx.clock.now_ns())
    schedule = generate_queries(eff, loaded)
    log.log_many(
        generated_entries(
            schedule.query_count,
            schedule.samples_per_query,
            schedule.generated_duration_ns,
        ),
        ctx.clock.now_ns(),
    )
    if ctx.on_phase is not None:
        ctx.on_phase(label)
    phase = run_phase(
        ctx.sut,
        schedule,
        eff,
        ctx.clock,
        log_mask=log_mask_fn(ctx.next_seq, schedule.sample_count),
        progress=ctx.progress,
        stop=ctx.stop,
        watcher=ctx.watcher if watched else None,
    )
    ctx.qsl.unload_samples(indices)
    if phase.stop_reason is not None:
        ctx.outcome.interrupted = phase.stop_reason
    _log_power(ctx, phase)
    for message, count in phase.errors.items():
        suffix = f" ({count} times)" if count > 1 else ""
        log.log("error_runtime", message + suffix, ctx.clock.now_ns(), kind="error")
    _collect_accuracy(ctx, eff, phase)
    ctx.next_seq += phase.samples_issued
    return phase


def _collect_accuracy(
    ctx: _Context, eff: EffectiveSettings, phase: PhaseResult
) -> None:
    if not phase.response_data:
        return
    token_run = eff.is_token_run
    for sample_id, payload in phase.response_data.items():
        token_data = phase.token_data.get(sample_id) if token_run else None
        if token_run and token_data is None and eff.scenario is not Scenario.OFFLINE:
            token_data = b""
        ctx.outcome.accuracy_entries.append(
            AccuracyEntry(
                seq_id=ctx.next_seq + sample_id,
                qsl_idx=int(phase.schedule.sample_indices[sample_id]),
                data=payload,
                token_data=token_data if eff.scenario is not Scenario.OFFLINE else None,
                token_count=int(phase.records.n_tokens[sample_id])
                if token_run
                else None,
            )
        )


def _accuracy(ctx: _Context, eff: EffectiveSettings) -> None:
    ctx.outcome.detail.log(
        "generic_message", "Starting accuracy mode", ctx.clock.now_ns()
    )
    sets = generate_loadable_sets(eff, ctx.qsl.total_sample_count)
    for k, loaded in enumerate(sets):
        if ctx.stopped:
            break
        phase = _run_set(
            ctx,
            eff,
            loaded.indices,
            loaded.distribution_end,
            lambda _seq, n: np.ones(n, dtype=np.bool_),
            f"accuracy set {k + 1}/{len(sets)}",
        )
        ctx.outcome.accuracy_phases.append(phase)


def _performance(ctx: _Context, eff: EffectiveSettings, *, final: bool) -> Summary:
    ctx.outcome.detail.log(
        "generic_message", "Starting performance mode", ctx.clock.now_ns()
    )
    loaded = generate_loadable_sets(eff, ctx.qsl.total_sample_count)[0]
    ctx.outcome.loaded_qsl_set = loaded.indices.tolist()
    phase = _run_set(
        ctx,
        eff,
        loaded.indices,
        loaded.distribution_end,
        lambda seq, n: _sampled_log_mask(eff, seq, n),
        "performance",
        watched=True,
    )
    summary = summarize(phase, eff)
    # Errors found while judging (n_tokens rules, first-token order) are logged
    # as ERRORs like the ones found while running.
    for message, count in (summary.errors - phase.errors).items():
        suffix = f" ({count} times)" if count > 1 else ""
        ctx.outcome.detail.log(
            "error_runtime", message + suffix, ctx.clock.now_ns(), kind="error"
        )
    if final or ctx.stopped:
        _log_results(ctx, summary)
        ctx.outcome.performance = phase
        ctx.outcome.summary = summary
    if ctx.stopped and not final:
        raise _Stopped  # a find-peak trial: the stopped trial is the one reported
    return summary


def _log_results(ctx: _Context, summary: Summary) -> None:
    ctx.outcome.detail.log_many(result_entries(summary), ctx.clock.now_ns())


def _log_power(ctx: _Context, phase: PhaseResult) -> None:
    """power_begin/end: the phase's wall-clock window, for power analysers."""
    log = ctx.outcome.detail
    now = ctx.clock.now_ns()
    offset_us = (phase.start_ns - log.origin_ns) / 1e3
    begin = ctx.outcome.started_at + dt.timedelta(microseconds=offset_us)
    end = begin + dt.timedelta(microseconds=(phase.end_ns - phase.start_ns) / 1e3)
    log.log("power_begin", _power_time(begin), now)
    log.log("power_end", _power_time(end), now)


def _power_time(moment: dt.datetime) -> str:
    return moment.strftime("%m-%d-%Y %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def _sampled_log_mask(
    eff: EffectiveSettings, first_seq: int, n: int
) -> npt.NDArray[np.bool_] | None:
    """Performance-mode accuracy-log sampling: ``frac(u_i + offset) <= p`` (spec 2.2)."""
    req = eff.requested
    p = req.accuracy_log_probability
    if req.accuracy_log_sampling_target > 0:
        spq = eff.samples_per_query
        expected = int(eff.target_qps * eff.min_duration_ms / 1000)
        minimum = (
            eff.min_sample_count
            if eff.scenario is Scenario.OFFLINE
            else eff.min_query_count * spq
        )
        if eff.scenario is not Scenario.OFFLINE:
            expected *= spq
        p = req.accuracy_log_sampling_target / max(expected, minimum)
    if p <= 0:
        return None
    u = MT19937Stream(5489).canonical(first_seq + n)[first_seq:]
    offset = float(MT19937Stream(req.accuracy_log_rng_seed).canonical(1)[0])
    shifted = u + offset
    shifted = np.where(shifted < 1.0, shifted, shifted - 1.0)
    return np.asarray(shifted <= p)


def _find_peak(ctx: _Context, eff: EffectiveSettings) -> None:
    def measure(settings: EffectiveSettings, final: bool) -> Summary:
        return _performance(ctx, settings, final=final)

    def note(message: str, *, error: bool) -> None:
        kind = "error" if error else ""
        key = "error_runtime" if error else "generic_message"
        ctx.outcome.detail.log(key, message, ctx.clock.now_ns(), kind=kind)

    try:
        find_peak(eff, measure, trials=ctx.outcome.peak_trials, note=note)
    except _Stopped:
        note(f"FindPeakPerformance: {ctx.outcome.interrupted}", error=False)
