"""Fit efficiency coefficients to published results; leave-one-out error per row.

Coefficients (compute, memory efficiency and the Server derate) are fitted per
(accelerator, stack, precision) by least squares on log error, shrunk towards
the fit of the whole stack, itself shrunk towards a global fit, so a group with
one row borrows strength from its stack. Each row's throughput is precomputed
on a coefficient grid, so a fit is a sum of grids and leave-one-out is cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.published import PublishedRow, load_rows
from infermeter.perfmodel.roofline import Efficiency, FloatArray
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import SystemSpec, throughput_grid

ETA_C = np.geomspace(0.05, 1.0, 61)
# Offline/Server rows are compute-bound: they do not identify the bandwidth
# efficiency, which stays at its prior (a one-point grid).
ETA_M = np.asarray([0.9])
PRIOR = Efficiency(compute=0.6, memory=0.9, server=0.92)
SHRINK = 1.0  # weight of the prior, in rows' worth of squared log error

WORKLOAD_ROUNDS = 4
REFERENCE_BENCHMARK = "llama2-70b"


@dataclass(frozen=True, slots=True)
class RowResult:
    """One row's published value and the model's predictions for it."""

    row: PublishedRow
    uncalibrated: float
    loo: float

    @property
    def uncalibrated_error(self) -> float:
        return abs(self.uncalibrated / self.row.tokens_per_s - 1.0)

    @property
    def loo_error(self) -> float:
        return abs(self.loo / self.row.tokens_per_s - 1.0)


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """Leave-one-out results, the fitted coefficients and where the rows came from."""

    source: str
    rows: tuple[RowResult, ...]
    groups: dict[tuple[tuple[str, str, str], str], Efficiency]
    log_workload: dict[str, float]

    def median_error(self, which: str, scenario: str | None = None) -> float:
        """Median absolute percentage error (as a fraction) of ``loo``/``uncalibrated``."""
        errs = [
            r.loo_error if which == "loo" else r.uncalibrated_error
            for r in self.rows
            if scenario is None or r.row.scenario == scenario
        ]
        return float(np.median(errs)) if errs else float("nan")

    def error_band(self) -> tuple[float, float]:
        """10th and 90th percentile of published/LOO-predicted: a prediction band."""
        ratios = [r.row.tokens_per_s / r.loo for r in self.rows]
        lo, hi = np.percentile(ratios, [10, 90])
        return float(lo), float(hi)


@dataclass(frozen=True, slots=True)
class _Prepared:
    row: PublishedRow
    log_obs: float
    log_grid: (
        FloatArray  # log tokens/s before the Server derate, (len ETA_C, len ETA_M)
    )


def _system(row: PublishedRow) -> SystemSpec:
    return SystemSpec(
        get_accelerator(row.accelerator),
        row.count,
        get_model(row.benchmark),
        row.precision,
    )


def _prepare(rows: Sequence[PublishedRow]) -> list[_Prepared]:
    out = []
    for row in rows:
        try:
            grid = throughput_grid(
                _system(row),
                get_workload(row.benchmark),
                row.scenario,
                PRIOR,
                ETA_C[:, None],
                ETA_M[None, :],
            )
        except ConfigError:
            continue  # the model cannot place this system (e.g. does not fit)
        with np.errstate(divide="ignore"):
            log_grid = np.log(grid)
        out.append(_Prepared(row, float(np.log(row.tokens_per_s)), log_grid))
    return out


def _fit(
    train: Sequence[_Prepared], prior: Efficiency, log_w: dict[str, float]
) -> Efficiency:
    """Minimise squared log error plus a squared log distance to ``prior``."""
    lc, lm = np.log(ETA_C)[:, None], np.log(ETA_M)[None, :]
    loss = SHRINK * (lc - np.log(prior.compute)) ** 2
    loss = loss + SHRINK * (lm - np.log(prior.memory)) ** 2
    server = [p for p in train if p.row.scenario == "Server"]
    with np.errstate(invalid="ignore"):
        for p in train:
            if p.row.scenario == "Offline":
                loss = (
                    loss
                    + (p.log_grid + log_w.get(p.row.benchmark, 0.0) - p.log_obs) ** 2
                )
        # The Server derate has a closed-form optimum at each grid point.
        resid = sum(
            (p.log_obs - p.log_grid - log_w.get(p.row.benchmark, 0.0) for p in server),
            np.zeros_like(loss),
        )
        log_s = (resid + SHRINK * np.log(prior.server)) / (len(server) + SHRINK)
        for p in server:
            w = log_w.get(p.row.benchmark, 0.0)
            loss = loss + (p.log_grid + w + log_s - p.log_obs) ** 2
        loss = loss + SHRINK * (log_s - np.log(prior.server)) ** 2
    loss = np.where(np.isfinite(loss), loss, np.inf)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return Efficiency(
        compute=float(ETA_C[i]),
        memory=float(ETA_M[j]),
        server=float(np.exp(log_s[i, j])),
    )


def _fit_groups(
    groups: set[tuple[str, str, str]],
    train: Sequence[_Prepared],
    log_w: dict[str, float],
) -> dict[tuple[str, str, str], Efficiency]:
    """Global fit, then each stack+precision, then each group, each shrunk to the last."""
    top = _fit(train, PRIOR, log_w)
    stacks: dict[tuple[str, str], Efficiency] = {}
    out = {}
    for group in sorted(groups):
        _, stack, precision = group
        key = (stack, precision)
        same_stack = [p for p in train if (p.row.stack, p.row.precision) == key]
        if key not in stacks:
            stacks[key] = _fit(same_stack, top, log_w) if same_stack else top
        same_group = [p for p in same_stack if p.row.group == group]
        out[group] = _fit(same_group, stacks[key], log_w) if same_group else stacks[key]
    return out


Group = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Fit:
    """Coefficients per group and per (group, benchmark), and a workload factor
    per benchmark (log)."""

    groups: dict[Group, Efficiency]
    by_benchmark: dict[tuple[Group, str], Efficiency]
    log_workload: dict[str, float]
    train: tuple[_Prepared, ...]

    def efficiency(self, group: Group, benchmark: str | None = None) -> Efficiency:
        """The most specific coefficients there are rows for."""
        if benchmark is not None and (group, benchmark) in self.by_benchmark:
            return self.by_benchmark[(group, benchmark)]
        if group in self.groups:
            return self.groups[group]
        return _fit_groups({group}, self.train, self.log_workload)[group]


def _initial_workload(train: Sequence[_Prepared]) -> dict[str, float]:
    """Start each benchmark at its median log residual at the prior, relative to the
    reference benchmark, so the alternation starts near its fixed point."""
    i = int(np.argmin(np.abs(ETA_C - PRIOR.compute)))
    med: dict[str, list[float]] = {}
    for p in train:
        med.setdefault(p.row.benchmark, []).append(p.log_obs - float(p.log_grid[i, 0]))
    ref = float(np.median(med.get(REFERENCE_BENCHMARK, [0.0])))
    return {
        b: float(np.median(r)) - ref for b, r in med.items() if b != REFERENCE_BENCHMARK
    }


def _fit_all(train: Sequence[_Prepared]) -> Fit:
    """Alternate group fits and per-benchmark workload factors (llama2-70b is the
    reference at 1.0); the factors absorb the unpublished mean input lengths."""
    log_w = _initial_workload(train)
    groups: dict[tuple[str, str, str], Efficiency] = {}
    for _ in range(WORKLOAD_ROUNDS):
        groups = _fit_groups({p.row.group for p in train}, train, log_w)
        sums: dict[str, list[float]] = {}
        for p in train:
            eff = groups[p.row.group]
            resid = p.log_obs - np.log(_predict(p, eff, {}))
            sums.setdefault(p.row.benchmark, []).append(float(resid))
        log_w = {
            b: 0.0 if b == REFERENCE_BENCHMARK else sum(r) / (len(r) + SHRINK)
            for b, r in sums.items()
        }
    # Last level: a benchmark on a group, shrunk towards the group.
    by_bench = {}
    for key in {(p.row.group, p.row.benchmark) for p in train}:
        rows = [p for p in train if (p.row.group, p.row.benchmark) == key]
        by_bench[key] = _fit(rows, groups[key[0]], log_w)
    return Fit(groups, by_bench, log_w, tuple(train))


def _predict(p: _Prepared, eff: Efficiency, log_w: dict[str, float]) -> float:
    i = int(np.argmin(np.abs(ETA_C - eff.compute)))
    j = int(np.argmin(np.abs(ETA_M - eff.memory)))
    derate = eff.server if p.row.scenario == "Server" else 1.0
    w = np.exp(log_w.get(p.row.benchmark, 0.0))
    return float(np.exp(p.log_grid[i, j])) * derate * float(w)


def _uncalibrated(p: _Prepared) -> float:
    one = np.asarray([1.0])
    base = Efficiency()
    grid = throughput_grid(
        _system(p.row),
        get_workload(p.row.benchmark),
        p.row.scenario,
        base,
        one * base.compute,
        one * base.memory,
    )
    return float(grid[0])


HOLDOUTS = ("row", "system")


def calibrate(
    rows: Sequence[PublishedRow], source: str, holdout: str = "row"
) -> CalibrationReport:
    """Fit on ``rows`` and predict each one from a fit that left it out.

    ``holdout="row"`` leaves out one row (one scenario of one system);
    ``holdout="system"`` leaves out every row of the row's result ID, so the
    same system's other scenario and benchmarks cannot help predict it.
    """
    if holdout not in HOLDOUTS:
        raise ConfigError(f"Unknown holdout {holdout!r}. Known: {', '.join(HOLDOUTS)}.")
    prepared = _prepare(rows)
    if len(prepared) < 2:
        raise ConfigError("Calibration needs at least two usable published rows.")
    results = []
    for k, p in enumerate(prepared):
        if holdout == "row":
            train = prepared[:k] + prepared[k + 1 :]
        else:
            train = [q for q in prepared if q.row.result_id != p.row.result_id]
        fit = _fit_all(train)
        eff = fit.efficiency(p.row.group, p.row.benchmark)
        loo = _predict(p, eff, fit.log_workload)
        results.append(RowResult(p.row, _uncalibrated(p), loo))
    full = _fit_all(prepared)
    return CalibrationReport(
        source, tuple(results), full.by_benchmark, full.log_workload
    )


@lru_cache(maxsize=4)
def default_report(path: Path | None = None, holdout: str = "row") -> CalibrationReport:
    """The calibration on the v4.1 file (or the built-in table), computed once."""
    rows, source = load_rows(path)
    return calibrate(rows, source, holdout)


@lru_cache(maxsize=4)
def default_fit(path: Path | None = None) -> Fit:
    """Coefficients fitted on every published row (no leave-one-out)."""
    rows, _ = load_rows(path)
    return _fit_all(_prepare(rows))


def efficiency_for(
    accelerator: str,
    precision: str,
    *,
    stack: str = "trt-llm",
    benchmark: str | None = None,
    path: Path | None = None,
) -> Efficiency:
    """Calibrated coefficients of a group (and benchmark, where it has rows);
    a group without rows borrows its stack's."""
    return default_fit(path).efficiency((accelerator, stack, precision), benchmark)
