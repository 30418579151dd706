"""Anchored prediction: the nearest published measurement carries the level, the
model the ratio between it and the target.

For a target (benchmark, scenario, part, count, stack) the anchors are published
rows of the same benchmark and scenario in the rounds a fit read, each at a
nearness: the same system (accelerator x count x stack), the same part and count,
the same part at another count, the same part family (its generation), or another
part. Each predicts ``anchor x model(target) / model(anchor)``, the model being the
calibrated one (physics and fitted effects, so the ratio carries the parts, the
counts, the stacks and each round's software level apart); the predictions combine
in log space, weighted by nearness and by how recent the anchor's round is. A
target without an anchor is the calibrated model's ("modelled").

Anchors are never read from the target's own round or a later one: a prediction
for a round says what the rounds before it knew. On the published rounds it beats
the naive baseline (the previous round's number) where one exists (v5.1 from
v4.1: 5.0 % against 10.3 %; v6.1 from v4.1 + v5.1: 26.4 % against 37.3 %), and
reads near the calibrated model alone on the anchored rows (5.9 % against 6.4 %
on v5.1, 19.6 % against 19.0 % on v6.1; docs/perfmodel.md, "Validation").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from infermeter.perfmodel.fit import Coefficients, Prepared, predict_log
from infermeter.perfmodel.published import PublishedRow, round_ordinal
from infermeter.perfmodel.specs import get_accelerator, get_workload

NEARNESS = (
    "same system",
    "same part and count",
    "same part, another count",
    "same part family",
    "another part",
)
# Each step of nearness counts half the one before; chosen on v5.1 from v4.1
# (anchored rows 5.9 % with 0.5; 8.9 % with the nearest step alone, 8.2 % with
# 0.3, 7.2 % with 1 a step; benchmarks/perfmodel/anchor_variants.py): averaging
# over many systems, each through the model's ratio, is steadier than one row.
STEP_WEIGHT = 0.5
# An anchor a year (two rounds) older than the newest counts half: software moves.
RECENCY = 0.5
SHOWN = 3  # anchors a table names per prediction (--json lists them all)


@dataclass(frozen=True, slots=True)
class Anchor:
    """A published row a prediction rests on, and what it predicts for the target."""

    result_id: str
    round: str
    nearness: int  # index into NEARNESS
    published: float  # the anchor's own tokens/s (an MLPerf result)
    scaled: float  # anchor x model(target) / model(anchor): derived
    weight: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "result_id": self.result_id,
            "round": self.round,
            "nearness": NEARNESS[self.nearness],
            "published_tokens_s": self.published,
            "scaled_tokens_s": self.scaled,
            "weight": self.weight,
        }


@dataclass(frozen=True, slots=True)
class Estimate:
    """A prediction with its kind: ``anchored`` (on ``anchors``) or ``modelled``."""

    predicted: float
    modelled: float  # the calibrated model alone
    anchors: tuple[Anchor, ...] = ()

    @property
    def kind(self) -> str:
        return "anchored" if self.anchors else "modelled"

    def named(self, shown: int = SHOWN) -> str:
        """The anchors a table names: the heaviest first, with their nearness."""
        if not self.anchors:
            return "modelled (no published row to anchor on)"
        top = sorted(self.anchors, key=lambda a: -a.weight)[:shown]
        text = ", ".join(f"{a.result_id} ({NEARNESS[a.nearness]})" for a in top)
        more = len(self.anchors) - len(top)
        return text + (f" +{more}" if more else "")


def family(part: str) -> str:
    """A part's generation (its ``arch``), the nearness after the part itself."""
    acc = get_accelerator(part.split("+")[0])
    return acc.arch or acc.key


def nearness(target: PublishedRow, anchor: PublishedRow) -> int:
    """How near ``anchor``'s system is to ``target``'s (an index into NEARNESS)."""
    if target.system_key == anchor.system_key:
        return 0
    if (target.accelerator, target.count) == (anchor.accelerator, anchor.count):
        return 1
    if target.accelerator == anchor.accelerator:
        return 2
    if family(target.accelerator) == family(anchor.accelerator):
        return 3
    return 4


def task(row: PublishedRow) -> tuple[str, str]:
    """What anchors a row: its benchmark (merged -99/-99.9 key) and scenario."""
    return (get_workload(row.benchmark).key, row.scenario)


class Anchors:
    """Published rows a fit read, indexed by benchmark and scenario, each with the
    calibrated model's prediction for it (the denominator of the ratio)."""

    def __init__(self, rows: Sequence[Prepared], coef: Coefficients) -> None:
        self.coef = coef
        self._by_task: dict[tuple[str, str], list[tuple[Prepared, float]]] = {}
        for p in rows:
            entry = (p, predict_log(p, coef))
            self._by_task.setdefault(task(p.row), []).append(entry)
        self.rounds = tuple(sorted({p.row.round for p in rows}, key=round_ordinal))

    def candidates(self, target: PublishedRow) -> list[tuple[Prepared, float]]:
        """Rows of the target's benchmark and scenario from rounds before its own."""
        limit = round_ordinal(target.round) if target.round else math.inf
        return [
            (p, m)
            for p, m in self._by_task.get(task(target), ())
            if round_ordinal(p.row.round) < limit
        ]

    def estimate(self, target: Prepared) -> Estimate:
        """The anchored prediction of ``target`` (tokens/s, derived)."""
        model = predict_log(target, self.coef)
        found = self.candidates(target.row)
        if not found:
            return Estimate(math.exp(model), math.exp(model))
        value, anchors = _combine(found, lambda r: nearness(target.row, r), model)
        return Estimate(math.exp(value), math.exp(model), anchors)

    def naive(self, target: PublishedRow) -> float | None:
        """The baseline a user can copy: the previous round's number for the same
        system (median over its copies), else for the same part and count."""
        found = [p.row for p, _ in self.candidates(target)]
        if not found:
            return None
        last = max(round_ordinal(r.round) for r in found)
        previous = [r for r in found if round_ordinal(r.round) == last]
        for near in (0, 1):
            same = [r.tokens_per_s for r in previous if nearness(target, r) <= near]
            if same:
                return float(np.median(same))
        return None

    def level(
        self, benchmark: str, scenario: str, part: str, stack: str
    ) -> tuple[float, tuple[Anchor, ...]]:
        """What the published rows of ``benchmark`` in ``scenario`` say of the
        calibrated model near ``part`` on ``stack`` (a plan's system, of any count):
        the factor published / modelled, combined as ``estimate`` combines anchors
        (1.0 and no anchors where the rounds read have no such row)."""
        found = self._by_task.get((get_workload(benchmark).key, scenario), [])
        if not found:
            return 1.0, ()

        def near(row: PublishedRow) -> int:
            # The plan's system at the anchor's count: same part and stack is
            # "same system", same part on another stack "same part and count".
            return nearness(replace(row, accelerator=part, stack=stack, parts=()), row)

        value, anchors = _combine(found, near, 0.0)
        return math.exp(value), anchors


def _combine(
    found: Sequence[tuple[Prepared, float]],
    near: Callable[[PublishedRow], int],
    model: float,
) -> tuple[float, tuple[Anchor, ...]]:
    """Each row as an anchor (its value times exp(``model`` - its own model), log
    scale), weighted by ``near`` and its round's age; their weighted log mean."""
    newest = max(round_ordinal(p.row.round) for p, _ in found)
    anchors = tuple(
        Anchor(
            p.row.result_id,
            p.row.round,
            near(p.row),
            p.row.tokens_per_s,
            math.exp(p.log_obs + model - m),
            STEP_WEIGHT ** near(p.row)
            * RECENCY ** ((newest - round_ordinal(p.row.round)) / 2),
        )
        for p, m in found
    )
    weights = np.asarray([a.weight for a in anchors])
    logs = np.log([a.scaled for a in anchors])
    return float(weights @ logs / weights.sum()), anchors
