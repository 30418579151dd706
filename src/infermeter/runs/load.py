"""Load beyond the MLPerf scenarios: fixed concurrency, arrival rates, trace replay, warm-up.

Builds a schedule from the load spec, runs it through the engine (open loop
for rates and traces, closed loop with K in flight for concurrency), and
returns the point's Endpoints figures and the client's self-certification.
A warm-up phase runs first and is left out of every figure.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from infermeter.clock import Clock, MonotonicClock
from infermeter.errors import ConfigError
from infermeter.loadgen.engine import IssuePolicy, PhaseResult, PhaseWatcher, run_phase
from infermeter.loadgen.interfaces import NsArray, SystemUnderTest
from infermeter.loadgen.schedule import Schedule
from infermeter.loadgen.settings import (
    NS_PER_S,
    EffectiveSettings,
    RunSettings,
    Scenario,
    effective_settings,
)
from infermeter.runs.arrivals import arrival_times, count_for
from infermeter.runs.client import scale_of
from infermeter.runs.endpoints import PointMetrics, point_metrics
from infermeter.runs.fleet_stats import fleet_block
from infermeter.runs.selfcert import CertBounds, ClientCertification, CpuMeter, certify
from infermeter.runs.trace import Trace

MODES = ("concurrency", "rate", "trace")
# A closed loop bounded by duration needs an upper bound on its query count.
MAX_OPEN_ENDED = 1_000_000


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """One load point. ``mode``: concurrency (closed loop), rate or trace (open loop).

    Stop after ``requests``, or (if 0) after ``duration_s``. For rates,
    ``concurrency`` is a cap applied by the SUT (``max_in_flight``), not here.
    """

    mode: str = "concurrency"
    concurrency: int = 1
    rate: float = 0.0
    pattern: str = "poisson"
    burstiness: float = 1.0
    requests: int = 0
    duration_s: float = 0.0
    warmup_requests: int = 0
    seed: int = 0
    trace: Trace | None = None
    completion_timeout_s: float = 120.0

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(
                f"Unknown load mode {self.mode!r}. Known: {', '.join(MODES)}"
            )
        if self.mode == "trace" and self.trace is None:
            raise ConfigError("Trace mode needs a trace: pass --trace FILE.jsonl")
        if self.mode == "concurrency" and self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1 (got {self.concurrency})")
        if self.mode != "trace" and not (self.requests > 0 or self.duration_s > 0):
            raise ConfigError("Give --requests N or --duration SECONDS")

    def label(self) -> str:
        if self.mode == "concurrency":
            return f"c{self.concurrency}"
        return f"r{self.rate:g}" if self.mode == "rate" else "trace"


@dataclass(slots=True)
class LoadResult:
    """A finished load point."""

    spec: LoadSpec
    phase: PhaseResult
    metrics: PointMetrics
    certification: ClientCertification
    started_at: dt.datetime
    sut_stats: dict[str, Any] = field(default_factory=dict)
    server_metrics: dict[str, Any] | None = None  # server_metrics.json of the point


def run_load(
    sut: SystemUnderTest,
    spec: LoadSpec,
    *,
    sample_count: int,
    clock: Clock | None = None,
    bounds: CertBounds | None = None,
    watcher: PhaseWatcher | None = None,
    keep_answers: bool = False,
) -> LoadResult:
    """Warm up, run the point, and measure it (``sample_count`` distinct prompts).

    ``watcher`` sees the measured phase as it runs (a live view), not the warm-up.
    ``keep_answers``: every measured query's answer lands in ``phase.response_data``
    (an accuracy pass), as LoadGen's accuracy mode logs every sample.
    """
    spec.validate()
    clock = clock or MonotonicClock()
    if spec.warmup_requests:
        warm = LoadSpec(
            mode="concurrency",
            concurrency=max(1, spec.concurrency),
            requests=spec.warmup_requests,
            seed=spec.seed + 1,
        )
        _phase(sut, warm, sample_count, clock)
    _reset(sut)  # each point's counts are its own (and ids restart at 0)
    started = dt.datetime.now(dt.UTC)
    with CpuMeter.of(sut) as cpu:
        phase = _phase(sut, spec, sample_count, clock, watcher, keep_answers)
    cap = float(spec.concurrency) if spec.mode == "concurrency" else None
    rate = spec.rate if spec.mode == "rate" else None
    metrics = point_metrics(phase, concurrency=cap, target_rate=rate)
    n = phase.samples_issued
    cert = certify(
        scheduled_ns=phase.query_origin_ns[:n],
        issued_ns=phase.records.issued_ns[:n],
        sent_ns=_send_times(sut, n),
        cpu_s=cpu.cpu_s,
        wall_s=cpu.wall_s,
        bounds=bounds,
        **scale_of(sut),
    )
    if not metrics.completed:
        # Nothing answered: the endpoint, not the client, is what failed.
        cert = dataclasses.replace(cert, client_bound=False, reasons=[], advice=[])
    stats = sut.stats() if callable(getattr(sut, "stats", None)) else {}  # type: ignore[attr-defined]
    fleet = fleet_block(sut, stats, phase)
    if fleet is not None:  # this point's requests per replica, TTFT, tokens/s
        stats["fleet"] = fleet
    return LoadResult(spec, phase, metrics, cert, started, stats)


def _phase(
    sut: SystemUnderTest,
    spec: LoadSpec,
    sample_count: int,
    clock: Clock,
    watcher: PhaseWatcher | None = None,
    keep_answers: bool = False,
) -> PhaseResult:
    times, closed = _times(spec)
    n = int(times.shape[0])
    indices = np.arange(n, dtype=np.int64) % max(1, sample_count)
    schedule = Schedule(
        scheduled_ns=times,
        sample_indices=indices,
        samples_per_query=1,
        query_offsets=None,
        generated_duration_ns=int(times[-1]) if n else 0,
    )
    settings = _settings(spec, sample_count)
    policy = (
        IssuePolicy(closed_loop=True, max_in_flight=spec.concurrency)
        if closed
        else IssuePolicy(closed_loop=False)
    )
    mask = np.ones(n, dtype=np.bool_) if keep_answers else None
    return run_phase(
        sut, schedule, settings, clock, policy=policy, watcher=watcher, log_mask=mask
    )


def _times(spec: LoadSpec) -> tuple[NsArray, bool]:
    if spec.mode == "trace":
        assert spec.trace is not None
        times = spec.trace.arrival_ns
        if spec.requests:
            times = times[: spec.requests]
        return times, False
    if spec.mode == "rate":
        n = spec.requests or count_for(spec.rate, spec.duration_s)
        return arrival_times(
            spec.pattern, spec.rate, n, seed=spec.seed, burstiness=spec.burstiness
        ), False
    n = spec.requests or MAX_OPEN_ENDED
    return np.zeros(n, dtype=np.int64), True


def _settings(spec: LoadSpec, sample_count: int) -> EffectiveSettings:
    bounded = spec.mode == "concurrency" and not spec.requests
    requested = RunSettings(
        scenario=Scenario.SERVER,
        server_target_qps=spec.rate if spec.rate > 0 else 1.0,
        min_duration_ms=0,
        min_query_count=1,
        max_duration_ms=int(spec.duration_s * 1000) if bounded else 0,
        use_token_latencies=True,
        completion_timeout_ns=int(spec.completion_timeout_s * NS_PER_S),
    )
    count = max(1, sample_count)
    return effective_settings(
        requested, qsl_total_count=count, qsl_performance_count=count
    )


def _send_times(sut: SystemUnderTest, n: int) -> NsArray | None:
    getter = getattr(sut, "send_times", None)
    if not callable(getter):
        return None
    ids, sent = getter()
    out = np.full(n, -1, dtype=np.int64)
    keep = ids < n
    out[ids[keep]] = sent[keep]
    return out


def _reset(sut: SystemUnderTest) -> None:
    reset = getattr(sut, "reset_records", None)
    if callable(reset):
        reset()
