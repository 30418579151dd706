"""``--engine mlcommons``: infermeter SUTs and QSLs driven by the official C++ LoadGen.

The SUT is registered with ``ConstructFastSUT``: each call's ids and indices
become one ``QueryBatch``; the sink answers through ``QuerySamplesComplete`` /
``FirstTokenComplete``. Verdict and metrics are read back from the official logs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock, MonotonicClock
from infermeter.compat.logparse import DetailFile, read_logs
from infermeter.compat.official_sink import OfficialSink
from infermeter.errors import MissingDependencyError
from infermeter.loadgen.interfaces import (
    QueryBatch,
    QuerySampleLibrary,
    SystemUnderTest,
)
from infermeter.loadgen.settings import Mode, RunSettings, Scenario

ENGINE_NAME = "mlcommons-loadgen"
PERCENTILES = ("50.00", "90.00", "95.00", "97.00", "99.00", "99.90")
_NOT_IN_LOADGEN = {"scenario", "mode", "completion_timeout_ns"}


class OfficialLoadGenMissingError(MissingDependencyError):
    """``mlperf_loadgen`` cannot be imported."""

    def __init__(self) -> None:
        super().__init__("mlcommons-loadgen", "mlcommons")
        self.args = (
            "--engine mlcommons needs the official LoadGen: pip install "
            "mlcommons-loadgen (or pip install 'infermeter[mlcommons]')",
        )


def load_official() -> ModuleType:
    """The official ``mlperf_loadgen`` module, or a one-line install hint."""
    try:
        return importlib.import_module("mlperf_loadgen")
    except ImportError as exc:
        raise OfficialLoadGenMissingError() from exc


def official_version() -> str:
    try:
        return version(ENGINE_NAME)
    except PackageNotFoundError:
        return "unknown"


def official_settings(lg: ModuleType, settings: RunSettings) -> Any:
    """An official ``TestSettings`` with every field of ``settings``."""
    ts = lg.TestSettings()
    ts.scenario = getattr(lg.TestScenario, settings.scenario.value)
    ts.mode = getattr(lg.TestMode, settings.mode.value)
    for f in dataclasses.fields(settings):
        if f.name not in _NOT_IN_LOADGEN:
            setattr(ts, f.name, getattr(settings, f.name))
    return ts


@dataclass
class OfficialOutcome:
    """What an official-engine run produced (read back from its logs)."""

    settings: RunSettings
    sut_name: str
    started_at: dt.datetime
    summary: dict[str, str]
    detail: DetailFile
    records: dict[str, npt.NDArray[Any]]
    failure_reasons: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    @property
    def samples_failed(self) -> int:
        return sum(self.failure_reasons.values())

    @property
    def samples_completed(self) -> int:
        done = (self.records["completed_ns"] >= 0) & (self.records["status"] == 0)
        return int(done.sum())

    @property
    def duration_s(self) -> float:
        done = self.records["completed_ns"]
        return float(done.max()) / 1e9 if done.shape[0] else 0.0

    @property
    def valid(self) -> bool | None:
        validity = self.detail.get("result_validity")
        if validity is None:
            return False if self.detail.errors else None
        return (
            validity == "VALID" and not self.detail.errors and not self.samples_failed
        )


def run_official(
    sut: SystemUnderTest,
    qsl: QuerySampleLibrary,
    settings: RunSettings,
    outdir: Path,
    *,
    trace: bool = False,
    clock: Clock | None = None,
    on_phase: Callable[[str], None] | None = None,
    audit_config: Path | None = None,
) -> OfficialOutcome:
    """Run ``sut`` on ``qsl`` through the official LoadGen; logs go to ``outdir``.

    LoadGen reads an audit.config only from ``audit_config`` (never from the
    working directory, so that both engines run with the same settings).
    """
    lg = load_official()
    clock = clock or MonotonicClock()
    settings.validate()
    log_all = settings.mode in (Mode.ACCURACY_ONLY, Mode.SUBMISSION_RUN) or (
        settings.accuracy_log_probability > 0
        or settings.accuracy_log_sampling_target > 0
    )
    sink = OfficialSink(lg, log_all=log_all, clock=clock)

    def issue(ids: list[int], indices: list[int]) -> None:
        now = clock.now_ns()
        sink.issue(ids, indices, now)
        batch = QueryBatch(
            np.asarray(ids, dtype=np.int64),
            np.asarray(indices, dtype=np.int64),
            np.full(len(ids), now, dtype=np.int64),
        )
        sut.issue_query(batch, sink)

    outdir.mkdir(parents=True, exist_ok=True)
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(outdir)
    log_settings.enable_trace = trace
    if on_phase is not None:
        on_phase(ENGINE_NAME)
    started = dt.datetime.now(dt.UTC)
    sut_handle = lg.ConstructFastSUT(issue, sut.flush_queries)
    qsl_handle = lg.ConstructQSL(
        qsl.total_sample_count,
        qsl.performance_sample_count,
        lambda idx: qsl.load_samples(np.asarray(idx, dtype=np.int64)),
        lambda idx: qsl.unload_samples(np.asarray(idx, dtype=np.int64)),
    )
    try:
        lg.StartTestWithLogSettings(
            sut_handle,
            qsl_handle,
            official_settings(lg, settings),
            log_settings,
            str(audit_config or outdir / "no-audit.config"),
        )
    finally:
        lg.DestroyQSL(qsl_handle)
        lg.DestroyFastSUT(sut_handle)
    summary, detail = read_logs(outdir)
    return OfficialOutcome(
        settings=settings,
        sut_name=getattr(sut, "name", type(sut).__name__),
        started_at=started,
        summary=summary,
        detail=detail,
        records=sink.arrays(),
        failure_reasons=dict(sink.failures),
        files=sorted(p.name for p in outdir.glob("mlperf_log_*")),
    )


def official_metrics(outcome: OfficialOutcome) -> dict[str, Any]:
    """run.json ``metrics`` (same keys as native runs) from the official detail log."""
    d = outcome.detail
    if d.get("result_validity") is None:
        return {}
    scenario = outcome.settings.scenario
    metrics: dict[str, Any] = {
        "queries_issued": d.get("result_query_count"),
        "samples_issued": outcome.samples_completed + outcome.samples_failed,
        "samples_completed": outcome.samples_completed,
        "samples_failed": outcome.samples_failed,
        "failure_reasons": outcome.failure_reasons,
        "duration_s": outcome.duration_s,
        "target_qps": d.get("effective_target_qps"),
        "samples_per_second": _headline(outcome, scenario),
        "latency_ns": _stats(
            d, "result_{}_latency_ns", "result_{}_percentile_latency_ns"
        ),
    }
    if scenario is Scenario.MULTI_STREAM:
        metrics["query_latency_ns"] = _stats(
            d, "result_{}_query_latency_ns", "result_{}_percentile_per_query_latency_ns"
        )
    if outcome.settings.use_token_latencies:
        metrics["tokens_per_second"] = d.get(
            "result_completed_tokens_per_second", d.get("result_tokens_per_second")
        )
        metrics["token_count"] = int(outcome.records["n_tokens"].sum())
        metrics["ttft_ns"] = _stats(
            d,
            "result_first_token_{}_latency_ns",
            "result_first_token_{}_percentile_latency_ns",
        )
        metrics["tpot_ns"] = _stats(
            d,
            "result_time_to_output_token_{}",
            "result_time_per_output_token_{}_percentile_ns",
        )
    return {k: v for k, v in metrics.items() if v is not None}


def _headline(outcome: OfficialOutcome, scenario: Scenario) -> float | None:
    d = outcome.detail
    if scenario is Scenario.OFFLINE:
        return _float(d.get("result_samples_per_second"))
    if scenario is Scenario.SERVER:
        return _float(d.get("result_completed_samples_per_sec"))
    if scenario is Scenario.SINGLE_STREAM:
        return _float(d.get("result_qps_with_loadgen_overhead"))
    # MultiStream: LoadGen logs no rate; derived from our own counts.
    return (
        outcome.samples_completed / outcome.duration_s if outcome.duration_s else None
    )


def _stats(d: DetailFile, plain: str, percentile: str) -> dict[str, int] | None:
    out: dict[str, int] = {}
    for name in ("min", "max", "mean"):
        value = d.get(plain.format(name))
        if value is not None:
            out[name] = int(value)
    for p in PERCENTILES:
        value = d.get(percentile.format(p))
        if value is not None:
            out[f"p{float(p):g}"] = int(value)
    return out or None


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def verdict_reasons(outcome: OfficialOutcome) -> list[str]:
    """One line per reason the official run is INVALID (or its logged errors)."""
    reasons = []
    invalid = outcome.detail.get("result_invalid_reason")
    if invalid:
        reasons.append(str(invalid).strip())
    checks = {
        "result_min_duration_met": "min duration not met",
        "result_min_queries_met": "min query count not met",
        "result_perf_constraints_met": "latency constraint not met",
        "early_stopping_met": "early stopping not met",
    }
    for key, text in checks.items():
        if outcome.detail.get(key) is False:
            reasons.append(text)
    reasons += [f"ERROR: {e}" for e in dict.fromkeys(outcome.detail.errors)]
    if outcome.samples_failed:
        reasons.append(f"{outcome.samples_failed} samples failed")
    return reasons
