"""One benchmark run end to end: settings -> QSL + SUT -> engine -> run folder -> store."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infermeter.clock import Clock, MonotonicClock
from infermeter.compat.official import OfficialOutcome, load_official, run_official
from infermeter.errors import ConfigError, InfermeterError
from infermeter.loadgen.budget import check_phase_memory
from infermeter.loadgen.conf import (
    AUDIT_WARNING,
    apply_conf,
    load_conf_file,
    settings_from_confs,
)
from infermeter.loadgen.engine import PhaseWatcher, Progress
from infermeter.loadgen.interfaces import SystemUnderTest
from infermeter.loadgen.live import watch_all
from infermeter.loadgen.runner import RunOutcome, run_test
from infermeter.loadgen.settings import (
    EffectiveSettings,
    Mode,
    RunSettings,
    Scenario,
    effective_settings,
)
from infermeter.loadgen.stop import StopSignal
from infermeter.results.energy import PowerSampler
from infermeter.runs import server_metrics
from infermeter.runs.client import ClientReport, collect
from infermeter.runs.folder import update_run_json, write_run_folder
from infermeter.runs.guard import (
    check_endpoint,
    mark_unmeasured,
    planned_run,
    refuse_unmeasurable,
    token_counts,
    watch_reachability,
)
from infermeter.runs.official_folder import engine_meta, write_official_folder
from infermeter.runs.request import RunRequest
from infermeter.runs.rundir import RunDir, claim_run_folder, provisional_meta
from infermeter.runs.selfcert import CpuMeter
from infermeter.runs.sim_endpoint import with_sim_defaults
from infermeter.suts.registry import SutContext, create_sut
from infermeter.version import __version__
from infermeter.workloads.accuracy.scorer import score_accuracy_log
from infermeter.workloads.benchmark import Benchmark
from infermeter.workloads.datasets.base import DatasetQSL
from infermeter.workloads.datasets.factory import (
    build_qsl,
    prompt_shape_of,
)
from infermeter.workloads.registry import get_benchmark

OVERRIDABLE = {
    "min_duration_ms",
    "max_duration_ms",
    "min_query_count",
    "max_query_count",
    "performance_sample_count_override",
    "completion_timeout_ns",
    "server_target_latency_ns",
    "ttft_latency",
    "tpot_latency",
    "accuracy_log_probability",
    "qsl_rng_seed",
    "sample_index_rng_seed",
    "schedule_rng_seed",
    "server_max_async_queries",
    "single_stream_expected_latency_ns",
    "multi_stream_expected_latency_ns",
}


@dataclass
class RunReport:
    """The outcome and where it was written."""

    outcome: RunOutcome | OfficialOutcome
    folder: Path
    document: dict[str, Any]
    warnings: list[str]


def build_settings(
    request: RunRequest, bench: Benchmark
) -> tuple[RunSettings, list[str]]:
    """mlperf.conf + user.conf for the benchmark, then the command-line overrides."""
    settings, warnings = settings_from_confs(
        bench.conf_model, request.scenario, user_conf_path=request.user_conf
    )
    settings.mode = request.mode
    if request.target_qps is not None:
        if request.target_qps <= 0:
            raise ConfigError(
                f"--target-qps must be > 0 (got {request.target_qps:g}); pass a positive rate"
            )
        settings.server_target_qps = request.target_qps
        settings.offline_expected_qps = request.target_qps
    for key, value in request.overrides.items():
        if key not in OVERRIDABLE:
            raise ConfigError(f"{key} cannot be overridden here")
        setattr(settings, key, value)
    if request.audit_config is not None:
        # Last, over the command line too, as LoadGen applies it at StartTest.
        warnings += apply_conf(
            settings,
            load_conf_file(request.audit_config),
            model=bench.conf_model,
            scenario=request.scenario,
            conf_type="audit",
        )
    settings.validate()
    return settings, warnings


def _qsl(request: RunRequest, bench: Benchmark) -> DatasetQSL:
    options = request.dataset_options
    count = request.total_sample_count
    if count is not None and count <= 0:
        raise ConfigError(
            f"--total-sample-count must be > 0 (got {count}); pass a sample count"
        )
    if request.total_sample_count is not None:
        options = dataclasses.replace(options, samples=request.total_sample_count)
    return build_qsl(
        bench, request.dataset, fmt=request.dataset_format, options=options
    )


def _tokenizer_counts_answers(request: RunRequest) -> RunRequest:
    """The tokenizer that shapes an endpoint's prompts also re-counts its answers
    (checked against the server's usage); a SUT option ``tokenizer`` still wins."""
    tokenizer = request.dataset_options.tokenizer
    if request.sut != "openai" or tokenizer is None:
        return request
    if "tokenizer" in request.sut_options:
        return request
    options = {**request.sut_options, "tokenizer": str(tokenizer)}
    return dataclasses.replace(request, sut_options=options)


def execute(
    request: RunRequest,
    *,
    clock: Clock | None = None,
    progress: Progress | None = None,
    on_phase: Callable[[str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    stop: StopSignal | None = None,
    live: PhaseWatcher | None = None,
) -> RunReport:
    """Run the benchmark and write the run folder; never raises for an INVALID result.

    ``on_note`` gets lines worth saying before the load starts (the preflight,
    the planned length). ``stop`` ends the run early (native engine): the
    folder is still written, with every completed sample and an INVALID
    verdict that says why. ``live`` watches each performance phase as it runs
    (native engine; a live view reads ``loadgen.live`` figures off it).
    """
    if request.engine not in ("native", "mlcommons"):
        raise ConfigError(
            f"Unknown engine {request.engine!r}. Known: native, mlcommons"
        )
    if request.engine == "mlcommons":
        load_official()  # a missing wheel is one line before any preflight or load
    bench = _benchmark(request.benchmark)
    if request.sut == "sim":
        request = with_sim_defaults(request, bench.name)
    request = _tokenizer_counts_answers(request)
    settings, warnings = build_settings(request, bench)
    warnings += _scenario_warning(bench, request.scenario)
    clock = clock or MonotonicClock()
    qsl = _qsl(request, bench)
    # What can be refused in a second is refused before the SUT starts.
    check_phase_memory(_effective(settings, qsl))
    rundir, run_id = claim_run_folder(request, bench.name)
    folder = rundir.path
    context = SutContext(
        qsl=qsl,
        clock=clock,
        scenario=request.scenario,
        benchmark=bench.name,
        token_run=settings.use_token_latencies,
        options=dict(request.sut_options),
        mode=settings.mode,
    )
    sampler = PowerSampler()  # NVML on GPUs, RAPL on CPUs, where readable
    checks: dict[str, Any] | None = None
    with rundir.discarded_on_error():  # nothing ran yet: leave no folder behind
        created = create_sut(request.sut, context)
    with _opened(created) as sut:
        with rundir.discarded_on_error():
            checks = _before_load(request, bench.name, sut, settings, qsl, on_note)
            rundir.start(provisional_meta(request, run_id), journal=_native(request))
        streamed = bool(getattr(sut, "streams", True))
        scraper = _start_scraper(request, sut, context.options, clock, on_note)
        with CpuMeter.of(sut) as meter:
            sampler.start()
            try:
                outcome = _run_engine(
                    request,
                    sut,
                    qsl,
                    settings,
                    rundir,
                    clock=clock,
                    progress=progress,
                    on_phase=on_phase,
                    stop=stop,
                    live=live,
                )
            finally:
                power = sampler.stop()
                rundir.close()
                if scraper is not None:
                    scraper.stop()
    client = (
        collect(sut, outcome, meter)
        if isinstance(outcome, RunOutcome)
        else ClientReport()
    )
    meta = _meta(request, bench, qsl, outcome, warnings, power)
    meta["run_id"] = run_id
    meta["client"] = client.certification
    if client.fleet is not None:
        meta["fleet"] = client.fleet
    warnings += _client_meta(
        meta, client, checks, token_run=settings.use_token_latencies
    )
    if isinstance(outcome, OfficialOutcome):
        document = write_official_folder(folder, outcome, meta=meta)
    else:
        document = write_run_folder(
            folder, outcome, meta=meta, trace=request.trace, sent_ns=client.sent_ns
        )
    if scraper is not None and isinstance(outcome, RunOutcome):
        document = _add_server_metrics(folder, document, scraper, outcome, sut)
    if not streamed:
        document = mark_unmeasured(folder, document)
    if settings.mode in (Mode.ACCURACY_ONLY, Mode.SUBMISSION_RUN):
        document = update_run_json(folder, accuracy=_score_accuracy(folder, bench, qsl))
    rundir.finish()
    if request.index:
        warnings += _index(folder, request.store)
    return RunReport(outcome, folder, document, warnings)


def _effective(settings: RunSettings, qsl: DatasetQSL) -> EffectiveSettings:
    return effective_settings(
        settings,
        qsl_total_count=qsl.total_sample_count,
        qsl_performance_count=qsl.performance_sample_count,
    )


def _client_meta(
    meta: dict[str, Any],
    client: ClientReport,
    checks: dict[str, Any] | None,
    *,
    token_run: bool,
) -> list[str]:
    """The SUT's counters, effective settings, token-count source and preflight
    into run.json; returns the warning an estimated token count earns."""
    if client.stats is not None:
        meta["sut"]["stats"] = client.stats
    if client.params:
        meta["sut"]["params"] = {**meta["sut"]["params"], **client.params}
    meta["token_counts"], estimate = token_counts(client.stats, token_run=token_run)
    if checks is not None:
        meta["preflight"] = checks
    return estimate


def _start_scraper(
    request: RunRequest,
    sut: SystemUnderTest,
    options: dict[str, str],
    clock: Clock,
    on_note: Callable[[str], None] | None,
) -> server_metrics.Scraper | None:
    """Scrape the endpoints' /metrics where they answer; one info line per one left out."""
    scraper, notes = server_metrics.start(
        request.metrics_urls, sut, options, clock, request.metrics_interval_s
    )
    for note in notes:
        if on_note is not None:
            on_note(f"info: {note}")
    return scraper


def _add_server_metrics(
    folder: Path,
    document: dict[str, Any],
    scraper: server_metrics.Scraper,
    outcome: RunOutcome,
    sut: SystemUnderTest,
) -> dict[str, Any]:
    phases = [outcome.performance, *outcome.accuracy_phases]
    start_ns = next((p.start_ns for p in phases if p is not None), 0)
    replicas = server_metrics.endpoint_urls(sut, {})
    block = server_metrics.finish(scraper, folder, start_ns, replicas)
    files = [*document.get("files", []), server_metrics.FILE]
    return update_run_json(folder, server_metrics=block, files=files)


def _before_load(
    request: RunRequest,
    benchmark: str,
    sut: SystemUnderTest,
    settings: RunSettings,
    qsl: DatasetQSL,
    on_note: Callable[[str], None] | None,
) -> dict[str, Any] | None:
    """Refuse what cannot be measured, check the endpoint, say how long the run is."""
    eff = _effective(settings, qsl)
    refuse_unmeasurable(sut, eff, benchmark)
    checks = None
    if request.sut == "openai" and request.preflight:
        config = getattr(sut, "config", None)
        checks = check_endpoint(request.sut_options, qsl, on_note, config)
    performance = settings.mode in (Mode.PERFORMANCE_ONLY, Mode.SUBMISSION_RUN)
    if on_note is not None and performance:  # every SUT: how long it will take
        on_note(f"planned run: {planned_run(eff, qsl.total_sample_count)}")
    return checks


def _run_engine(
    request: RunRequest,
    sut: SystemUnderTest,
    qsl: DatasetQSL,
    settings: RunSettings,
    rundir: RunDir,
    *,
    clock: Clock,
    progress: Progress | None,
    on_phase: Callable[[str], None] | None,
    stop: StopSignal | None,
    live: PhaseWatcher | None = None,
) -> RunOutcome | OfficialOutcome:
    if request.engine == "mlcommons":
        return run_official(
            sut,
            qsl,
            settings,
            rundir.path,
            trace=request.trace,
            clock=clock,
            on_phase=on_phase,
            audit_config=request.audit_config,
        )
    return run_test(
        sut,
        qsl,
        settings,
        clock=clock,
        progress=progress,
        on_phase=on_phase,
        stop=watch_reachability(sut, stop),
        watcher=watch_all(rundir.journal, live),
        warnings=(AUDIT_WARNING,) if request.audit_config is not None else (),
    )


def _native(request: RunRequest) -> bool:
    return request.engine == "native"


def _meta(
    request: RunRequest,
    bench: Benchmark,
    qsl: DatasetQSL,
    outcome: RunOutcome | OfficialOutcome,
    warnings: list[str],
    power: dict[str, Any],
) -> dict[str, Any]:
    """run.json fields the engine does not know: benchmark, SUT, dataset, power."""
    native = {"name": "native", "version": _engine_version()}
    return {
        "benchmark": bench.name,
        "engine": engine_meta() if request.engine == "mlcommons" else native,
        "sut": {
            "kind": request.sut,
            "name": outcome.sut_name,
            "params": _public_options(request.sut_options),
        },
        "dataset": _dataset_meta(request, qsl),
        "warnings": warnings,
        "power": power,
    }


def _dataset_meta(request: RunRequest, qsl: DatasetQSL) -> dict[str, Any]:
    """What ``infermeter accuracy`` needs to rebuild the dataset later."""
    opts = request.dataset_options
    synthetic = request.dataset is None
    return {
        "name": getattr(qsl, "name", "dataset"),
        "path": None if synthetic else str(request.dataset),
        "format": "synthetic" if synthetic else request.dataset_format,
        "seed": opts.seed,
        "tokenizer_path": str(opts.tokenizer) if opts.tokenizer else None,
        "prompts": prompt_shape_of(opts).describe() if synthetic else None,
        "total_sample_count": qsl.total_sample_count,
        "performance_sample_count": qsl.performance_sample_count,
    }


def _score_accuracy(folder: Path, bench: Benchmark, qsl: DatasetQSL) -> dict[str, Any]:
    """Score the run's accuracy log; a scoring problem is reported, not raised."""
    try:
        return score_accuracy_log(folder, bench, qsl).to_dict()
    except InfermeterError as exc:
        return {"error": str(exc), "passed": None}


def _scenario_warning(bench: Benchmark, scenario: Scenario) -> list[str]:
    if scenario.value in bench.scenarios:
        return []
    return [
        f"{bench.name} has no {scenario.value} scenario in the MLPerf rules (it has "
        f"{', '.join(bench.scenarios)}); this run uses mlperf.conf's generic defaults"
    ]


def _benchmark(name: str) -> Benchmark:
    if name.endswith("-interactive"):
        return get_benchmark(name.removesuffix("-interactive")).interactive()
    return get_benchmark(name)


@contextlib.contextmanager
def _opened(sut: SystemUnderTest) -> Iterator[SystemUnderTest]:
    try:
        yield sut
    finally:
        close = getattr(sut, "close", None)
        if callable(close):
            close()


def _public_options(options: dict[str, str]) -> dict[str, str]:
    # Secrets never reach a run folder: keys are named by env var or file only.
    return {
        k: v for k, v in options.items() if "key" not in k.lower() or k.endswith("_env")
    }


def _engine_version() -> str:
    return __version__


def _index(folder: Path, store: Path | None) -> list[str]:
    from infermeter.results.store import Store

    try:
        with Store(store) as db:
            db.index_run(folder)
    except InfermeterError as exc:
        return [f"the run was not added to the results store: {exc}"]
    return []
