"""Sweeps: the MLPerf Endpoints curve over concurrency levels or rates, and a peak search.

Each point is a ``run_load`` whose ``result_summary.json`` goes to
``<out>/<label>/performance/``; ``sweep.json`` holds the curve, the Pareto
flags and, for a search, every probe. The search finds the highest rate whose
TTFT and TPOT percentiles stay under their limits (FindPeak for endpoints).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import SystemUnderTest
from infermeter.runs import server_metrics
from infermeter.runs.endpoints import LABEL, PointMetrics, result_summary, write_json
from infermeter.runs.load import LoadResult, LoadSpec, run_load
from infermeter.suts.token_count import describe
from infermeter.throughput import SWEEP


@dataclass(frozen=True, slots=True)
class Limits:
    """Latency limits (ms) at a percentile; None = no limit on that series."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    percentile: float = 90.0
    max_failed_fraction: float = 0.0

    def check(self, point: PointMetrics) -> list[str]:
        """Why ``point`` misses the limits (empty when it meets them)."""
        import numpy as np

        misses: list[str] = []
        for name, limit, series in (
            ("TTFT", self.ttft_ms, point.ttft_ns),
            ("TPOT", self.tpot_ms, point.tpot_ns),
        ):
            if limit is None:
                continue
            if series.size == 0:
                misses.append(f"no {name} measured")
                continue
            value = float(np.percentile(series, self.percentile, method="higher")) / 1e6
            if value > limit:
                misses.append(
                    f"{name} p{self.percentile:g} {value:.1f} ms > {limit:g} ms"
                )
        if point.issued and point.failed / point.issued > self.max_failed_fraction:
            misses.append(f"{point.failed} of {point.issued} requests failed")
        if point.unanswered:  # never within any limit: the point did not finish
            misses.append(f"{point.unanswered} of {point.issued} requests unanswered")
        return misses


@dataclass(slots=True)
class SweepResult:
    """Every point in order, with Pareto flags; ``peak_rate`` for a search."""

    points: list[LoadResult]
    pareto: list[bool]
    misses: list[list[str]] = field(default_factory=list)
    peak_rate: float | None = None

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for i, (result, best, miss) in enumerate(
            zip(self.points, self.pareto, self.misses, strict=True)
        ):
            row: dict[str, Any] = {"point": f"{i:02d}_{result.spec.label()}"}
            row.update(result.metrics.curve_row())
            row.update(
                issued=result.metrics.issued,
                pareto=best,
                meets_limits=not miss,
                misses=miss,
                client_bound=result.certification.client_bound,
                failure_reasons=result.metrics.failure_reasons,
                token_counts=result.sut_stats.get("token_counts"),
            )
            rows.append(row)
        return rows


def pareto_flags(points: list[PointMetrics]) -> list[bool]:
    """True for points no other point beats on both system and per-user tokens/s.

    A point where no request completed measured nothing, and one with requests
    left unanswered measured a window cut short: neither is marked, nor beats
    another point.
    """
    whole = [q for q in points if q.completed and not q.unanswered]
    counted = {id(q) for q in whole}

    def dominated(p: PointMetrics) -> bool:
        if id(p) not in counted:
            return True
        pu = p.tps_per_user or 0.0
        for q in whole:
            qu = q.tps_per_user or 0.0
            if (
                q is not p
                and q.system_tps >= p.system_tps
                and qu >= pu
                and (q.system_tps > p.system_tps or qu > pu)
            ):
                return True
        return False

    return [not dominated(p) for p in points]


Runner = Callable[[LoadSpec], LoadResult]


def load_runner(sut: SystemUnderTest, sample_count: int, **kw: Any) -> Runner:
    """A runner of load points against one SUT."""
    return lambda spec: run_load(sut, spec, sample_count=sample_count, **kw)


def sweep(
    run: Runner,
    base: LoadSpec,
    levels: list[float],
    *,
    limits: Limits | None = None,
    out_dir: Path | None = None,
) -> SweepResult:
    """One point per level: concurrency levels when ``base.mode`` is concurrency, else rates."""
    if not levels:
        raise ConfigError("Give at least one level, e.g. --concurrency 1,2,4,8")
    limits = limits or Limits()
    points = [run(_at(base, level)) for level in levels]
    result = SweepResult(
        points,
        pareto_flags([p.metrics for p in points]),
        [limits.check(p.metrics) for p in points],
    )
    if out_dir is not None:
        write_sweep(result, out_dir, limits)
    return result


def find_peak(
    run: Runner,
    base: LoadSpec,
    limits: Limits,
    *,
    start_rate: float = 1.0,
    max_rate: float = 1e6,
    precision: float = 0.05,
    max_probes: int = 20,
    out_dir: Path | None = None,
) -> SweepResult:
    """Highest rate meeting ``limits``: double until a miss, then bisect to ``precision``."""
    if limits.ttft_ms is None and limits.tpot_ms is None:
        raise ConfigError("A peak search needs --ttft-ms and/or --tpot-ms")
    probes: list[LoadResult] = []
    misses: list[list[str]] = []

    def probe(rate: float) -> bool:
        result = run(_at(dataclasses.replace(base, mode="rate"), rate))
        probes.append(result)
        misses.append(limits.check(result.metrics))
        return not misses[-1]

    low, high = _bracket(probe, start_rate, max_rate, lambda: len(probes) < max_probes)
    while len(probes) < max_probes and low and high and high - low > precision * low:
        middle = (low + high) / 2
        if probe(middle):
            low = middle
        else:
            high = middle
    result = SweepResult(
        probes, pareto_flags([p.metrics for p in probes]), misses, peak_rate=low or None
    )
    if out_dir is not None:
        write_sweep(result, out_dir, limits)
    return result


def _bracket(
    probe: Callable[[float], bool],
    rate: float,
    max_rate: float,
    more: Callable[[], bool],
) -> tuple[float, float | None]:
    """(highest passing, lowest failing) rate: doubling up, or halving down."""
    if probe(rate):
        low = rate
        while more() and rate * 2 <= max_rate:
            rate *= 2
            if not probe(rate):
                return low, rate
            low = rate
        return low, None
    high = rate
    while more():
        rate /= 2
        if probe(rate):
            return rate, high
        high = rate
    return 0.0, high


def _at(base: LoadSpec, level: float) -> LoadSpec:
    if base.mode == "concurrency":
        return dataclasses.replace(base, concurrency=int(level))
    return dataclasses.replace(base, rate=float(level))


def write_sweep(result: SweepResult, out_dir: Path, limits: Limits) -> Path:
    """Per-point ``performance/result_summary.json`` and the whole ``sweep.json``."""
    for i, point in enumerate(result.points):
        config = {"load": _spec_dict(point.spec), "point": i}
        counts = point.sut_stats.get("token_counts")
        extra = {
            "client": point.certification.as_dict(),
            "sut": point.sut_stats,
            "token_counts": None
            if counts is None
            else {**counts, "description": describe(counts)},
            "throughput_definition": SWEEP,
        }
        summary = result_summary(
            point.metrics, started_at=point.started_at, run_config=config, extra=extra
        )
        folder = out_dir / f"{i:02d}_{point.spec.label()}" / "performance"
        write_json(folder / "result_summary.json", summary)
        if point.server_metrics is not None:
            server_metrics.write(folder, point.server_metrics)
    document = {
        "label": LABEL,
        "limits": dataclasses.asdict(limits),
        "peak_rate": result.peak_rate,
        "points": result.table(),
    }
    return write_json(out_dir / "sweep.json", document)


def _spec_dict(spec: LoadSpec) -> dict[str, Any]:
    data = dataclasses.asdict(spec)
    data.pop("trace", None)
    return data
