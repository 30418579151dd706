"""The anchored prediction's variants of docs/notes/perfmodel-validation.md ("Anchors and
software levels", "A benchmark's first round"), re-measured: how anchors are weighted
by nearness, how much the fit counts older rounds, anchors from a sibling scenario or
benchmark of the same system, a software trend carried forward, and how the fit
carries a benchmark's first-round software, on v5.1 predicted from v4.1 and v6.1 from
v4.1 + v5.1.

For each variant: the anchored rows' median |error|, all rows' median / p90, and on the
rows with a naive baseline (the previous round's number for the same system, else part
and count) the predictor's median against the baseline's and the share where it is
closer. Published values are MLPerf results; predictions are derived. Needs ../shared;
about four minutes on the 2-core VM.

    .venv/bin/python benchmarks/perfmodel/anchor_variants.py
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np

from infermeter.perfmodel import anchor
from infermeter.perfmodel import fit as fitmod
from infermeter.perfmodel.anchor import Anchor, Anchors, Estimate
from infermeter.perfmodel.calibrate import (
    Validation,
    anchors_from,
    load_results,
    predict_anchored,
)
from infermeter.perfmodel.fit import Coefficients, Prepared, fit, predict_log, prepare
from infermeter.perfmodel.published import PublishedRow, round_ordinal

SPLITS = (("v5.1", ("v4.1",)), ("v6.1", ("v4.1", "v5.1")))


@contextmanager
def step_weight(value: float) -> Iterator[None]:
    """Anchors one step of nearness further count ``value`` times (shipped 0.5;
    0: the nearest step alone, as a very small weight)."""
    shipped = anchor.STEP_WEIGHT
    anchor.STEP_WEIGHT = value
    try:
        yield
    finally:
        anchor.STEP_WEIGHT = shipped


def predict(target: str, rounds: tuple[str, ...], recency: float) -> Validation:
    read = load_results(list(rounds))
    prepared, _ = prepare(read.rows)
    coef = fit(prepared, recency=recency, label="variant")
    return predict_anchored(load_results([target]), coef, anchors_from(read, coef))


def line(label: str, v: Validation) -> str:
    kinds = {s.label: s for s in v.kinds()}
    anchored, overall, base = kinds["anchored"], v.overall(), v.baseline()
    return (
        f"{label:40s} anchored {anchored.median:6.1%}  all {overall.median:6.1%} /"
        f" {overall.p90:6.1%}  baseline rows {base.rows}: {base.predictor:6.1%} vs"
        f" {base.naive:6.1%}, closer {base.closer:4.0%}"
    )


# Steps from the target's task to an anchor's: Interactive from Server, Server from
# Offline (and back) one step; Offline from Interactive two.
SIBLING_SCENARIO = {
    ("Interactive", "Server"): 1,
    ("Server", "Interactive"): 1,
    ("Server", "Offline"): 1,
    ("Offline", "Server"): 1,
    ("Interactive", "Offline"): 2,
    ("Offline", "Interactive"): 2,
}


@dataclasses.dataclass(frozen=True)
class Siblings:
    """Anchors beyond the target's own benchmark and scenario: the same benchmark in
    a sibling scenario (``scenario``) and other benchmarks in the same scenario
    (``benchmark``), each a task step weighing ``task_weight``, only from systems
    at most ``nearest`` steps of nearness away; ``fallback``: only where the
    target's own task has no anchor."""

    scenario: bool = False
    benchmark: bool = False
    nearest: int = 4
    task_weight: float = 0.5
    fallback: bool = False

    def label(self) -> str:
        kinds = "+".join(
            k
            for k, on in (("scenario", self.scenario), ("benchmark", self.benchmark))
            if on
        )
        only = ", only without own-task anchors" if self.fallback else ""
        return f"siblings {kinds}, nearness <= {self.nearest}{only}"


class SiblingAnchors(Anchors):
    """``Anchors`` that also read sibling tasks of the target (``Siblings``)."""

    def __init__(self, rows: list[Prepared], coef: Coefficients, how: Siblings):
        super().__init__(rows, coef)
        self.how = how

    def _steps(self, target: PublishedRow, task: tuple[str, str]) -> int | None:
        own = anchor.task(target)
        if task == own:
            return 0
        if task[0] == own[0] and self.how.scenario:
            return SIBLING_SCENARIO.get((own[1], task[1]))
        if task[1] == own[1] and self.how.benchmark:
            return 1
        return None

    def estimate(self, target: Prepared) -> Estimate:
        model = predict_log(target, self.coef)
        limit = round_ordinal(target.row.round)
        found = []
        for task, rows in self._by_task.items():
            steps = self._steps(target.row, task)
            for p, m in rows if steps is not None else ():
                near = anchor.nearness(target.row, p.row)
                if round_ordinal(p.row.round) < limit and (
                    steps == 0 or near <= self.how.nearest
                ):
                    found.append((p, m, steps, near))
        if self.how.fallback and any(f[2] == 0 for f in found):
            found = [f for f in found if f[2] == 0]
        if not found:
            return Estimate(math.exp(model), math.exp(model))
        newest = max(round_ordinal(p.row.round) for p, *_ in found)
        anchors = tuple(
            Anchor(
                p.row.result_id,
                p.row.round,
                near,
                p.row.tokens_per_s,
                math.exp(p.log_obs + model - m),
                anchor.STEP_WEIGHT**near
                * self.how.task_weight**steps
                * anchor.RECENCY ** ((newest - round_ordinal(p.row.round)) / 2),
            )
            for p, m, steps, near in found
        )
        w = np.asarray([a.weight for a in anchors])
        logs = np.log([a.scaled for a in anchors])
        return Estimate(math.exp(float(w @ logs / w.sum())), math.exp(model), anchors)


@cache
def _fitted(rounds: tuple[str, ...]) -> tuple[list[Prepared], Coefficients]:
    prepared, _ = prepare(load_results(list(rounds)).rows)
    return prepared, fit(prepared, recency=0.5, label="variant")


def predict_siblings(target: str, rounds: tuple[str, ...], how: Siblings) -> Validation:
    prepared, coef = _fitted(rounds)
    return predict_anchored(
        load_results([target]), coef, SiblingAnchors(prepared, coef, how)
    )


def software_trend(rows: tuple[PublishedRow, ...]) -> tuple[float, int]:
    """The same systems' move per year between consecutive rounds read (median of
    each system x benchmark x scenario's ratio), and how many pairs it rests on;
    1.0 from one round."""
    by: dict[tuple[object, ...], list[float]] = defaultdict(list)
    for r in rows:
        by[(r.system_key, r.benchmark, r.scenario, r.round)].append(r.tokens_per_s)
    rounds = sorted({r.round for r in rows}, key=round_ordinal)
    ratios = []
    for old, new in itertools.pairwise(rounds):
        years = (round_ordinal(new) - round_ordinal(old)) / 2
        for (key, bench, scen, rnd), values in by.items():
            before = by.get((key, bench, scen, old))
            if rnd == new and before:
                move = statistics.median(values) / statistics.median(before)
                ratios.append(move ** (1 / years))
    return (statistics.median(ratios) if ratios else 1.0), len(ratios)


def predict_trend(target: str, rounds: tuple[str, ...], modelled: bool) -> Validation:
    """The shipped prediction with the same systems' software trend carried forward:
    each anchor by its years behind the target, and (``modelled``) each modelled
    row by the years from the newest round read."""
    trend, _ = software_trend(load_results(list(rounds)).rows)
    v = predict(target, rounds, 0.5)
    newest = max(round_ordinal(r) for r in rounds)
    moved = []
    for p in v.predictions:
        ahead = round_ordinal(p.row.round)
        if p.anchors:
            years = sum(
                a.weight * (ahead - round_ordinal(a.round)) / 2 for a in p.anchors
            ) / sum(a.weight for a in p.anchors)
        else:
            years = (ahead - newest) / 2 if modelled else 0.0
        moved.append(dataclasses.replace(p, predicted=p.predicted * trend**years))
    return dataclasses.replace(v, predictions=tuple(moved))


@dataclasses.dataclass(frozen=True)
class FirstRound:
    """How the fit carries a benchmark's first round (``fit.benchmark_age`` 0, from
    the workload registry's ``introduced``). Shipped: a derate per scenario
    (``first:Offline``; ``first:Server`` for Server and Interactive) and no age
    effect. ``age0``: the speed effect ``age:0`` as well (before 2026-12-01: it
    alone, ``level=False``); ``interactive``: Interactive's own ``first:Interactive``
    on top of Server's; ``bench``: the benchmark's own effect on its first-round
    rows too (else learned from later rounds only); ``own_server``: the
    benchmark's own first-round Server level (``scenbench:Server|X|first``);
    ``prior``: the first-round derates' prior standard deviation."""

    level: bool = True
    age0: bool = False
    interactive: bool = False
    bench: bool = True
    own_server: bool = True
    prior: float = 0.3

    def speed(self, *args: str, round_: str = "", **kw: Any) -> tuple[str, ...]:
        """``fit.speed_features`` (part, stack, precision, benchmark, ...) reshaped."""
        out = SHIPPED_FEATURES[0](*args, round_=round_, **kw)
        benchmark = args[3]
        first = fitmod.benchmark_age(benchmark, round_) == 0
        if first and not self.bench:
            out = tuple(n for n in out if not n.startswith("bench:"))
        return (*out, "age:0") if first and self.age0 else out

    def scenario(
        self, scenario: str, stack: str, benchmark: str, part: str, round_: str = ""
    ) -> tuple[str, ...]:
        out = SHIPPED_FEATURES[1](scenario, stack, benchmark, part, round_)
        drop = () if self.level else ("first:Offline", "first:Server")
        kept = [
            n
            for n in out
            if n not in drop and (self.own_server or not n.endswith("|first"))
        ]
        first = fitmod.benchmark_age(benchmark, round_) == 0
        if first and self.level and self.interactive and scenario == "Interactive":
            kept.append("first:Interactive")
        return tuple(kept)


SHIPPED_FEATURES = (fitmod.speed_features, fitmod.scenario_features)


@contextmanager
def first_round(how: FirstRound) -> Iterator[None]:
    """The fit (and every prediction's features) with ``how``'s first round."""
    shipped_prior = fitmod.PRIOR_SD["first"]
    fitmod.speed_features = how.speed
    fitmod.scenario_features = how.scenario
    fitmod.PRIOR_SD["first"] = how.prior
    _fitted.cache_clear()
    try:
        yield
    finally:
        fitmod.speed_features, fitmod.scenario_features = SHIPPED_FEATURES
        fitmod.PRIOR_SD["first"] = shipped_prior
        _fitted.cache_clear()


FIRST_ROUND = {
    "first round: a derate per scenario (shipped)": FirstRound(),
    "first round: the age:0 speed effect alone (before)": FirstRound(
        level=False, age0=True
    ),
    "first round: both age:0 and the derates": FirstRound(age0=True),
    "first round: + Interactive's own derate": FirstRound(interactive=True),
    "first round: derate prior sd 0.15": FirstRound(prior=0.15),
    "first round: derate prior sd 0.5": FirstRound(prior=0.5),
    "first round: benchmark effect from later rounds": FirstRound(bench=False),
    "first round: no benchmark's own first Server level": FirstRound(own_server=False),
}


def main() -> None:
    for target, rounds in SPLITS:
        print(f"## {target} from {' + '.join(rounds)}")
        for weight in (1e-6, 0.3, 0.5, 1.0):
            with step_weight(weight):
                print(
                    line(
                        f"nearness weight {weight:g} a step",
                        predict(target, rounds, 0.5),
                    )
                )
        if len(rounds) > 1:
            for recency in (1.0, 0.5, 0.25, 0.1):
                print(
                    line(
                        f"older rounds x{recency:g} a year",
                        predict(target, rounds, recency),
                    )
                )
        for how in (
            Siblings(scenario=True),
            Siblings(scenario=True, nearest=0),
            Siblings(scenario=True, nearest=2, fallback=True),
            Siblings(benchmark=True, nearest=2),
            Siblings(benchmark=True, nearest=0),
            Siblings(scenario=True, benchmark=True, nearest=2, fallback=True),
        ):
            print(line(how.label(), predict_siblings(target, rounds, how)))
        trend, pairs = software_trend(load_results(list(rounds)).rows)
        for modelled in (False, True):
            where = "anchors and modelled rows" if modelled else "anchors"
            label = f"trend x{trend:.2f}/year ({pairs} pairs) on {where}"
            print(line(label, predict_trend(target, rounds, modelled)))
        for label, shape in FIRST_ROUND.items():
            with first_round(shape):
                print(line(label, predict(target, rounds, 0.5)))


if __name__ == "__main__":
    main()
