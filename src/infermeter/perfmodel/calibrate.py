"""Calibrate the performance model on published rows and validate it honestly.

Two validations, both reported by ``infermeter model``:

- leave-one-round-out: fit on one round (v4.1), predict a later one (v5.1) it
  has never seen, with its new parts and benchmarks;
- leave-one-system-out: every row of one accelerator x count x software stack
  is predicted from a fit that saw none of them (vendors submit near-identical
  copies of one system, so leaving out one row at a time flatters the model).

The package ships its fitted coefficients (``data/coefficients.json``, labelled
with the rounds read); ``infermeter model calibrate --write`` regenerates them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.anchor import Anchor, Anchors, Estimate, task
from infermeter.perfmodel.fit import (
    Coefficients,
    fit,
    precision_for,
    predict_log,
    prepare,
    scenario_features,
    speed_features,
)
from infermeter.perfmodel.published import (
    PublishedRow,
    Rows,
    Skipped,
    read_rows,
    round_file,
)
from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.specs import get_accelerator, get_workload

SHIPPED = "coefficients.json"
DEFAULT_FIT = "v4.1+v5.1+v6.1"


@dataclass(frozen=True, slots=True)
class RowPrediction:
    """One published row and the model's prediction for it (derived); an anchored
    prediction names its anchors, and ``naive`` is the baseline a user can copy
    (the previous round's number for the same system, else part and count)."""

    row: PublishedRow
    predicted: float
    anchors: tuple[Anchor, ...] = ()
    naive: float | None = None

    @property
    def error(self) -> float:
        """Signed relative error: predicted / published - 1."""
        return self.predicted / self.row.tokens_per_s - 1.0

    @property
    def kind(self) -> str:
        return "anchored" if self.anchors else "modelled"

    def named_anchors(self) -> str:
        return Estimate(self.predicted, self.predicted, self.anchors).named()

    @property
    def naive_error(self) -> float | None:
        return None if self.naive is None else self.naive / self.row.tokens_per_s - 1


@dataclass(frozen=True, slots=True)
class Baseline:
    """The predictor against the naive baseline on the rows that have one."""

    rows: int
    predictor: float  # median |error|
    naive: float
    closer: float  # share of rows where the predictor is closer (ties: neither)
    naive_closer: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "predictor_median_abs_error": _finite(self.predictor),
            "naive_median_abs_error": _finite(self.naive),
            "predictor_closer": _finite(self.closer),
            "naive_closer": _finite(self.naive_closer),
        }


def baseline(preds: Sequence[RowPrediction]) -> Baseline:
    pairs = [
        (abs(p.error), abs(p.naive_error)) for p in preds if p.naive_error is not None
    ]
    if not pairs:
        return Baseline(0, math.nan, math.nan, math.nan, math.nan)
    ours, theirs = np.asarray(pairs).T
    return Baseline(
        len(pairs),
        float(np.median(ours)),
        float(np.median(theirs)),
        float(np.mean(ours < theirs)),
        float(np.mean(theirs < ours)),
    )


@dataclass(frozen=True, slots=True)
class Stats:
    label: str
    rows: int
    median: float
    p90: float
    bias: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "set": self.label,
            "rows": self.rows,
            "median_abs_error": _finite(self.median),
            "p90_abs_error": _finite(self.p90),
            "median_signed_error": _finite(self.bias),
        }


def _finite(x: float) -> float | None:
    """JSON has no NaN (strict parsers such as jq reject it): an empty set is null."""
    return None if math.isnan(x) else x


def stats(label: str, preds: Sequence[RowPrediction]) -> Stats:
    errs = np.asarray([p.error for p in preds])
    if errs.size == 0:
        return Stats(label, 0, math.nan, math.nan, math.nan)
    absolute = np.abs(errs)
    return Stats(
        label,
        int(errs.size),
        float(np.median(absolute)),
        float(np.percentile(absolute, 90)),
        float(np.median(errs)),
    )


@dataclass(frozen=True)
class Validation:
    """Predictions of rows the fit never saw, and the rows it could not place."""

    name: str
    fit_label: str
    predictions: tuple[RowPrediction, ...]
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total(self) -> int:
        return len(self.predictions) + len(self.skipped)

    @property
    def coverage(self) -> float:
        return len(self.predictions) / self.total if self.total else math.nan

    def overall(self) -> Stats:
        return stats("all rows", self.predictions)

    def by(self, key: Callable[[PublishedRow], str]) -> list[Stats]:
        return _grouped(self.predictions, lambda p: key(p.row))

    def kinds(self) -> list[Stats]:
        """Error of anchored and of modelled predictions apart."""
        return _grouped(self.predictions, lambda p: p.kind)

    def baseline(self) -> Baseline:
        return baseline(self.predictions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "validation": self.name,
            "fit": self.fit_label,
            "label": "predicted (derived), not MLPerf results",
            "rows": self.total,
            "modelled": len(self.predictions),
            "coverage": _finite(self.coverage),
            "overall": self.overall().as_dict(),
            "by_kind": [s.as_dict() for s in self.kinds()],
            "against_naive_baseline": self.baseline().as_dict(),
            "by_scenario": [s.as_dict() for s in self.by(lambda r: r.scenario)],
            "by_benchmark_scenario": [
                s.as_dict() for s in self.by(lambda r: f"{r.benchmark} {r.scenario}")
            ],
            "by_accelerator": [s.as_dict() for s in self.by(lambda r: r.accelerator)],
            "not_modelled": [
                {
                    "result_id": s.result_id,
                    "benchmark": s.benchmark,
                    "scenario": s.scenario,
                    "accelerator": s.accelerator,
                    "reason": s.reason,
                }
                for s in self.skipped
            ],
            "per_row": [
                {
                    "result_id": p.row.result_id,
                    "round": p.row.round,
                    "submitter": p.row.submitter,
                    "accelerator": p.row.accelerator,
                    "variant": p.row.variant,
                    "count": p.row.count,
                    "stack": p.row.stack,
                    "precision": p.row.precision,
                    "benchmark": p.row.benchmark,
                    "scenario": p.row.scenario,
                    "published_tokens_s": p.row.tokens_per_s,
                    "predicted_tokens_s": p.predicted,
                    "error": p.error,
                    "kind": p.kind,
                    "anchors": [a.as_dict() for a in p.anchors],
                    "naive_tokens_s": p.naive,
                    "flags": p.row.flags,
                }
                for p in self.predictions
            ],
            "notes": list(self.notes),
        }


def _grouped(
    preds: Sequence[RowPrediction], key: Callable[[RowPrediction], str]
) -> list[Stats]:
    groups: dict[str, list[RowPrediction]] = {}
    for p in preds:
        groups.setdefault(key(p), []).append(p)
    return [stats(k, v) for k, v in sorted(groups.items())]


# -- reading rows -------------------------------------------------------------
def load_results(sources: Sequence[str | Path]) -> Rows:
    """Rows of one or more summary files (a path, or a round name like "v5.1")."""
    if not sources:
        raise ConfigError("Pass at least one --results FILE (summary_results.json).")
    parts = [read_rows(round_file(str(s))) for s in sources]
    for part in parts:
        if not part.rows and not part.skipped:
            raise ConfigError(
                f"'{part.source}' holds no LLM results (Offline, Server or "
                "Interactive rows of an LLM benchmark); pass a summary_results.json "
                "that has some."
            )
    rows = tuple(r for p in parts for r in p.rows)
    skipped = tuple(s for p in parts for s in p.skipped)
    rounds = tuple(sorted({r for p in parts for r in p.rounds}))
    return Rows(rows, skipped, rounds, ", ".join(p.source for p in parts))


def _unplaced(failed: Sequence[tuple[PublishedRow, str]]) -> tuple[Skipped, ...]:
    return tuple(
        Skipped(r.result_id, r.benchmark, r.scenario, r.accelerator, why)
        for r, why in failed
    )


# -- fitting and validating -----------------------------------------------------
def calibrate_rows(rows: Sequence[PublishedRow], label: str = "") -> Coefficients:
    """Coefficients fitted on every row the physics can place."""
    prepared, _ = prepare(rows)
    return fit(prepared, label=label)


def predict_rows(rows: Rows, coef: Coefficients, name: str = "") -> Validation:
    """Predict every row of ``rows`` with ``coef`` (a fit that never saw them)."""
    prepared, failed = prepare(rows.rows)
    preds = tuple(
        RowPrediction(p.row, math.exp(predict_log(p, coef))) for p in prepared
    )
    name, notes = _naming(rows, coef, name)
    return Validation(name, coef.label, preds, rows.skipped + _unplaced(failed), notes)


def _naming(rows: Rows, coef: Coefficients, name: str) -> tuple[str, tuple[str, ...]]:
    name = name or f"predict {', '.join(rows.rounds)} from a fit {coef.label}"
    seen = sorted(set(rows.rounds) & set(coef.rounds))
    if not seen:
        return name, ()
    # The errors are the fit's residuals: they flatter the model.
    return name + " (in-sample)", (
        f"in-sample: the fit read {', '.join(seen)}, the round of these rows, so "
        "these errors measure how well it fits them, not how well it predicts; "
        "fit on earlier rounds (--fit v4.1 for v5.1 rows) or hold systems out "
        "('infermeter model calibrate --holdout system').",
    )


def predict_anchored(
    rows: Rows, coef: Coefficients, anchors: Anchors | None, name: str = ""
) -> Validation:
    """Predict every row of ``rows`` anchored on the nearest rows ``anchors`` hold
    (from rounds before each row's own), beside the naive baseline; the calibrated
    model alone where no anchor exists or ``anchors`` is None."""
    if anchors is None:
        plain = predict_rows(rows, coef, name)
        note = (
            f"no anchors: the published rows of {', '.join(coef.rounds)} are not "
            "on this machine (../shared/data/mlperf), so every prediction is the "
            "calibrated model's (modelled)"
        )
        return dataclasses.replace(plain, notes=(*plain.notes, note))
    prepared, failed = prepare(rows.rows)
    preds = []
    for p in prepared:
        est = anchors.estimate(p)
        preds.append(
            RowPrediction(p.row, est.predicted, est.anchors, anchors.naive(p.row))
        )
    name, notes = _naming(rows, coef, name)
    return Validation(
        name, coef.label, tuple(preds), rows.skipped + _unplaced(failed), notes
    )


def fit_rows(coef: Coefficients) -> Rows | None:
    """The published rows of the rounds ``coef`` read (the anchors a prediction
    under it may use), or None where a round's file is not on this machine."""
    paths = [round_file(r) for r in coef.rounds]
    if not paths or not all(p.exists() for p in paths):
        return None
    return load_results([str(p) for p in paths])


def anchors_from(
    rows: Rows | None,
    coef: Coefficients,
    targets: Sequence[PublishedRow] | None = None,
) -> Anchors | None:
    """``rows`` as anchors under ``coef``; with ``targets``, only the rows of their
    benchmarks and scenarios (the only ones an estimate of them reads: a prediction
    of a few rows then places a few dozen on the speed grid, not a whole round's)."""
    if rows is None:
        return None
    keep = rows.rows
    if targets is not None:
        tasks = {task(r) for r in targets}
        keep = tuple(r for r in keep if task(r) in tasks)
    prepared, _ = prepare(keep)
    return Anchors(prepared, coef)


def leave_one_system_out(rows: Rows) -> Validation:
    """Each accelerator x count x stack predicted by a fit without any of its rows."""
    return _leave_out(
        rows,
        lambda r: "|".join(map(str, r.system_key)),
        "system",
        "accelerator x count x stack held out",
    )


def leave_one_benchmark_out(rows: Rows) -> Validation:
    """Each benchmark predicted by a fit without any of its rows (every system):
    how a benchmark the next round adds would be predicted."""
    return _leave_out(
        rows,
        lambda r: get_workload(r.benchmark).key,
        "benchmark",
        "every row of one benchmark held out",
    )


def _leave_out(
    rows: Rows, key: Callable[[PublishedRow], str], what: str, held: str
) -> Validation:
    prepared, failed = prepare(rows.rows)
    keys = [key(p.row) for p in prepared]
    groups = sorted(set(keys))
    if len(groups) < 2:
        raise ConfigError(
            f"Leaving one {what} out needs rows of at least two; these rows have "
            f"{len(groups)} ({', '.join(groups) or 'none'}): use --holdout none."
        )
    preds: list[RowPrediction] = []
    for out in groups:
        # From zero, not from a fit that saw the held-out rows: where the fit has
        # more than one optimum (a physics change can make it so) such a start
        # would steer the refit toward them.
        coef = fit([p for p, k in zip(prepared, keys, strict=True) if k != out])
        preds += [
            RowPrediction(p.row, math.exp(predict_log(p, coef)))
            for p, k in zip(prepared, keys, strict=True)
            if k == out
        ]
    rounds = " + ".join(rows.rounds)
    return Validation(
        f"leave-one-{what}-out over {rounds} ({held})",
        f"refit without each {what} ({len(prepared)} rows, {rounds})",
        tuple(sorted(preds, key=lambda p: (p.row.result_id, p.row.benchmark))),
        rows.skipped + _unplaced(failed),
    )


# -- shipped coefficients -----------------------------------------------------
def coefficients_to_dict(coef: Coefficients, sources: Sequence[str]) -> dict[str, Any]:
    return {
        "label": coef.label,
        "rounds": list(coef.rounds),
        "rows": coef.rows,
        "sources": list(sources),
        "values": dict(sorted(coef.values.items())),
        "support": dict(sorted(coef.support.items())),
    }


_REGENERATE = (
    "regenerate it with 'infermeter model calibrate --results FILE --write PATH'"
)


def coefficients_from_dict(d: dict[str, Any]) -> Coefficients:
    try:
        return Coefficients(
            {str(k): float(v) for k, v in d["values"].items()},
            int(d["rows"]),
            tuple(str(r) for r in d["rounds"]),
            str(d["label"]),
            {str(k): int(v) for k, v in d.get("support", {}).items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ConfigError(
            "a coefficients entry needs label, rounds, rows and numeric values; "
            f"{_REGENERATE}."
        ) from None


@lru_cache(maxsize=1)
def shipped() -> dict[str, Coefficients]:
    """The fits that ship with the package, by the rounds they were fitted on."""
    text = (
        resources.files("infermeter.perfmodel")
        .joinpath("data")
        .joinpath(SHIPPED)
        .read_text()
    )
    data = json.loads(text)
    return {k: coefficients_from_dict(v) for k, v in data["fits"].items()}


class NotCoefficients(ConfigError):
    """``name`` is neither a shipped fit nor a coefficients file (a JSON object):
    a caller that also takes a summary_results.json may read it as one."""


def fits_table(data: object, name: str) -> dict[str, Any]:
    """The ``fits`` map of a coefficients file (``--write`` makes and merges them),
    each entry an object; a one-line error naming ``name`` otherwise."""
    fits = data.get("fits") if isinstance(data, dict) else None
    if not isinstance(fits, dict) or not all(
        isinstance(f, dict) for f in fits.values()
    ):
        raise ConfigError(
            f"{name!r}: 'fits' must map a fit's name to an object with label, rounds, "
            f"rows and values; {_REGENERATE}, or pass another file."
        )
    return fits


def load_coefficients(name: str = DEFAULT_FIT) -> Coefficients:
    """A shipped fit by its rounds ("v4.1", "v4.1+v5.1") or a coefficients JSON file
    (an object: one fit, or ``{"fits": {name: fit}}`` as ``--write`` makes)."""
    fits = shipped()
    key = "+".join(t if t.startswith("v") else f"v{t}" for t in name.split("+"))
    if key in fits:
        return fits[key]
    path = Path(name)
    if path.suffix == ".json" and path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            # A binary file is not UTF-8 text: one line, like any unreadable file.
            raise ConfigError(
                f"Cannot read coefficients {name!r} (a JSON text file): {exc}."
            ) from None
        if not isinstance(data, dict):
            raise NotCoefficients(
                f"{name!r} is not a coefficients file (a JSON object)."
            )
        if "fits" in data:
            inner = fits_table(data, name)
            if not inner:
                raise ConfigError(f"{name!r} holds no fit; {_REGENERATE}.")
            data = next(iter(inner.values()))
        try:
            return coefficients_from_dict(data)
        except ConfigError as exc:
            raise ConfigError(f"{name!r}: {exc}") from None
    raise NotCoefficients(
        f"No fit named {name!r}. Shipped: {', '.join(sorted(fits))}; or pass a "
        "summary_results.json to refit."
    )


# -- coefficients for one system (planner, system builder, serve-sim) ----------
STACKS = ("trt-llm", "vllm", "sglang", "llmboost", "pytorch", "other")


def check_stack(stack: str) -> str:
    """``stack`` if it is one the published rows name; else a one-line ConfigError."""
    if stack not in STACKS:
        raise ConfigError(f"Unknown stack {stack!r}; use one of: {', '.join(STACKS)}.")
    return stack


def efficiency_for(
    accelerator: str,
    precision: str,
    *,
    stack: str | None = None,
    benchmark: str = "llama2-70b",
    coefficients: Coefficients | None = None,
    scenario: str = "Server",
    round_: str = "",
) -> Efficiency:
    """Calibrated efficiency of one system: the fitted speed folded into compute and
    memory efficiency, the ``scenario``'s derate (Server or Interactive) in ``server``;
    ``stack`` defaults to the one the part usually runs (``Accelerator.usual_stack``);
    ``round_`` is the round whose software to assume (default: mature software)."""
    coef = coefficients or load_coefficients()
    acc = get_accelerator(accelerator)
    wl = get_workload(benchmark)
    prec = precision_for(acc.key, precision)
    stk = check_stack(stack or acc.usual_stack)
    speed = math.exp(
        coef.log_speed(speed_features(acc.key, stk, prec, wl.key, round_=round_))
    )
    derate = math.exp(
        coef.log_derate(scenario_features(scenario, stk, wl.key, acc.key, round_))
    )
    return Efficiency(server=derate).scaled(speed)
