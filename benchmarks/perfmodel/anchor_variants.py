"""The anchored prediction's variants of docs/notes/perfmodel-validation.md ("Anchors and
software levels"), re-measured: how anchors are weighted by nearness, and how much the
fit counts older rounds, on v5.1 predicted from v4.1 and v6.1 from v4.1 + v5.1.

For each variant: the anchored rows' median |error|, all rows' median / p90, and on the
rows with a naive baseline (the previous round's number for the same system, else part
and count) the predictor's median against the baseline's and the share where it is
closer. Published values are MLPerf results; predictions are derived. Needs ../shared;
about a minute on the 2-core VM.

    .venv/bin/python benchmarks/perfmodel/anchor_variants.py
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from infermeter.perfmodel import anchor
from infermeter.perfmodel.calibrate import (
    Validation,
    anchors_from,
    load_results,
    predict_anchored,
)
from infermeter.perfmodel.fit import fit, prepare

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


if __name__ == "__main__":
    main()
