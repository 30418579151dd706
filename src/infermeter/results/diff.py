"""A/B comparison of two runs with bootstrap confidence intervals (for CI gates).

For each metric the bootstrap resamples both runs' records independently and
takes the relative difference ``B / A - 1``. A metric is *worse* (or *better*)
only when its whole interval lies beyond ``threshold`` in that direction;
otherwise there is no significant difference. Exit code 4 means worse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError
from infermeter.results.records import Records
from infermeter.results.runfolder import RunFolder
from infermeter.throughput import run_rate

EXIT_WORSE = 4
NO_DIFFERENCE = "no significant difference"
F64 = npt.NDArray[np.float64]
MIN_RESAMPLES = 100  # fewer put a 95 % interval's ends on two or three draws
Stat = Callable[[F64], F64]  # rows of resamples -> one statistic per row


@dataclass(frozen=True, slots=True)
class MetricDiff:
    name: str
    unit: str
    higher_is_better: bool
    a: float
    b: float
    change: float  # B / A - 1
    low: float
    high: float
    verdict: str


@dataclass(frozen=True)
class DiffResult:
    run_a: str
    run_b: str
    metrics: list[MetricDiff]
    confidence: float
    threshold: float
    resamples: int

    @property
    def verdict(self) -> str:
        verdicts = {m.verdict for m in self.metrics}
        if "worse" in verdicts:
            return "worse"
        return "better" if "better" in verdicts else NO_DIFFERENCE

    @property
    def exit_code(self) -> int:
        return EXIT_WORSE if self.verdict == "worse" else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "confidence": self.confidence,
            "threshold": self.threshold,
            "resamples": self.resamples,
            "metrics": [asdict(m) for m in self.metrics],
        }


def _percentile(q: float) -> Stat:
    def stat(rows: F64) -> F64:
        return np.percentile(rows, q, axis=1)

    return stat


def _mean(rows: F64) -> F64:
    means: F64 = rows.mean(axis=1)
    return means


def window_rates(times_ns: F64, weights: F64, windows: int) -> F64:
    """Per-window throughput (weight per second) over the span of completions."""
    end = float(times_ns.max()) if times_ns.size else 0.0
    if end <= 0:
        return np.zeros(1)
    edges = np.linspace(0.0, end, windows + 1)
    sums, _ = np.histogram(times_ns, bins=edges, weights=weights)
    rates: F64 = sums / ((end / windows) / 1e9)
    return rates


def _series(rec: Records, tokens: bool) -> dict[str, tuple[F64, Stat, str, bool]]:
    ok = rec.ok
    done = rec.completed_ns[ok].astype(np.float64)
    weight = rec.n_tokens[ok].astype(np.float64) if tokens else np.ones(done.size)
    windows = int(min(50, max(5, done.size // 40)))
    out: dict[str, tuple[F64, Stat, str, bool]] = {
        "throughput": (
            window_rates(done, weight, windows),
            _mean,
            "tokens/s" if tokens else "samples/s",
            True,
        )
    }
    latency = rec.latency_ns().astype(np.float64) / 1e6
    for q in (50, 90, 99):
        out[f"latency p{q}"] = (latency, _percentile(q), "ms", False)
    if tokens:
        ttft = rec.ttft_ns().astype(np.float64) / 1e6
        tpot = rec.tpot_ns() / 1e6
        for q in (50, 99):
            out[f"TTFT p{q}"] = (ttft, _percentile(q), "ms", False)
            out[f"TPOT p{q}"] = (tpot, _percentile(q), "ms", False)
    return out


def _anchored(boot: F64, point: float, run: RunFolder) -> tuple[F64, float]:
    figure = run_rate(run.metrics, tokens=run.is_token_run)
    if figure is None or point <= 0:
        return boot, point
    scaled: F64 = boot * (figure / point)
    return scaled, figure


def _bootstrap(
    values: F64, stat: Stat, resamples: int, rng: np.random.Generator, cap: int
) -> F64:
    if values.size > cap:  # bound the cost: a random subset keeps the distribution
        values = rng.choice(values, cap, replace=False)
    out = np.empty(resamples)
    chunk = max(1, 2_000_000 // max(values.size, 1))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, values.size, size=(stop - start, values.size))
        out[start:stop] = stat(values[idx])
    return out


def _verdict(low: float, high: float, threshold: float, higher_better: bool) -> str:
    if low > threshold:
        return "better" if higher_better else "worse"
    if high < -threshold:
        return "worse" if higher_better else "better"
    return NO_DIFFERENCE


def diff_runs(
    a: RunFolder,
    b: RunFolder,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    threshold: float = 0.02,
    seed: int = 0,
    max_samples: int = 20_000,
) -> DiffResult:
    """Compare run B against baseline A, metric by metric."""
    if not 0.5 < confidence < 1.0:
        raise ConfigError(f"--confidence must be in (0.5, 1) (got {confidence}).")
    if resamples < MIN_RESAMPLES:  # 0 or -1 ended in an internal error
        raise ConfigError(
            f"--resamples must be >= {MIN_RESAMPLES} for a percentile interval "
            f"(got {resamples}; default 1000)."
        )
    if threshold < 0:
        raise ConfigError(f"--threshold must be >= 0 (got {threshold}).")
    if a.is_token_run != b.is_token_run:
        raise ConfigError(
            "One run reports tokens and the other does not; compare "
            "runs of the same benchmark."
        )
    rng = np.random.default_rng(seed)
    tail = (1.0 - confidence) / 2 * 100
    series_a, series_b = (
        _series(a.records, a.is_token_run),
        _series(b.records, b.is_token_run),
    )
    metrics = []
    for name, (values_a, stat, unit, higher_better) in series_a.items():
        values_b = series_b[name][0]
        if values_a.size < 2 or values_b.size < 2:
            continue
        point_a = float(stat(values_a[None, :])[0])
        point_b = float(stat(values_b[None, :])[0])
        boot_a = _bootstrap(values_a, stat, resamples, rng, max_samples)
        boot_b = _bootstrap(values_b, stat, resamples, rng, max_samples)
        if name == "throughput":
            # The run's own figure (one definition for run, diff, compare and
            # report); the windows give its spread, scaled to that figure.
            boot_a, point_a = _anchored(boot_a, point_a, a)
            boot_b, point_b = _anchored(boot_b, point_b, b)
        rel = boot_b / np.where(boot_a == 0, np.nan, boot_a) - 1.0
        low, high = np.nanpercentile(rel, [tail, 100 - tail])
        change = point_b / point_a - 1.0 if point_a else 0.0
        verdict = _verdict(float(low), float(high), threshold, higher_better)
        metrics.append(
            MetricDiff(
                name,
                unit,
                higher_better,
                point_a,
                point_b,
                change,
                float(low),
                float(high),
                verdict,
            )
        )
    return DiffResult(a.run_id, b.run_id, metrics, confidence, threshold, resamples)
