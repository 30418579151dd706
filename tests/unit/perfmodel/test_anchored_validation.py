"""Anchored predictions of a round the fit never read, against the naive baseline
(issue 36's checks; docs/perfmodel.md, "Validation", has the tables).

Reads ../shared/data/mlperf in place and skips without it. Where a bound is looser
than the issue's target the docs say so: it guards against regressions, it does
not claim the target.
"""

from __future__ import annotations

import pytest

from infermeter.perfmodel.calibrate import (
    Validation,
    anchors_from,
    calibrate_rows,
    load_results,
    predict_anchored,
)
from infermeter.perfmodel.published import round_file

ROUNDS = ("v4.1", "v5.1", "v6.1")
pytestmark = pytest.mark.skipif(
    not all(round_file(r).exists() for r in ROUNDS),
    reason="../shared MLPerf summary files (v4.1, v5.1, v6.1) are absent",
)


def _predict(target: str, *fit: str) -> Validation:
    read = load_results(list(fit))
    coef = calibrate_rows(read.rows, "test")
    return predict_anchored(load_results([target]), coef, anchors_from(read, coef))


@pytest.fixture(scope="module")
def v51() -> Validation:
    return _predict("v5.1", "v4.1")


@pytest.fixture(scope="module")
def v61() -> Validation:
    return _predict("v6.1", "v4.1", "v5.1")


@pytest.mark.parametrize("name", ["v51", "v61"])
def test_anchored_rows_beat_the_naive_baseline(
    name: str, request: pytest.FixtureRequest
) -> None:
    # Issue target: median <= 0.8x the naive baseline's, closer on more than half.
    # Measured: v5.1 from v4.1 5.0 % against 10.3 % (33 rows, closer on 88 %);
    # v6.1 from v4.1 + v5.1 26.4 % against 37.3 % (50 rows, closer on 90 %).
    v: Validation = request.getfixturevalue(name)
    base = v.baseline()
    assert base.rows >= 30
    assert base.predictor <= 0.8 * base.naive and base.closer > 0.5


def test_anchors_come_only_from_rounds_before_the_predicted_one(
    v51: Validation, v61: Validation
) -> None:
    assert {a.round for p in v51.predictions for a in p.anchors} == {"v4.1"}
    assert {a.round for p in v61.predictions for a in p.anchors} == {"v4.1", "v5.1"}
    # A fit that read v5.1 still anchors no v5.1 row on the round itself.
    inside = _predict("v5.1", "v4.1", "v5.1")
    assert {a.round for p in inside.predictions for a in p.anchors} == {"v4.1"}


def test_overall_error_of_the_next_round(v51: Validation, v61: Validation) -> None:
    # Issue target: median <= 10 %, p90 <= 25 %: not met (docs say why: the rows
    # of benchmarks and scenarios the fit never read are modelled). Measured:
    # v5.1 11.0 % / 28.8 % (anchored rows 5.9 %), v6.1 16.1 % / 38.2 % (DeepSeek-R1
    # and Llama 3.1 8B moved 1.5-2.8x on the same systems after their first round;
    # 11.7 % / 29.0 % and 17.1 % / 40.3 % before the first-round derate).
    a, b = v51.overall(), v61.overall()
    assert a.median <= 0.12 and a.p90 <= 0.31
    assert b.median <= 0.18 and b.p90 <= 0.42
    anchored = {s.label: s for s in v51.kinds()}["anchored"]
    assert anchored.rows > 100 and anchored.median <= 0.08


def test_a_plan_names_its_anchors_and_a_fit_by_round_reads_no_later_round() -> None:
    from infermeter.perfmodel.planner import Option, Targets, plan_accelerator

    t = Targets(500, 10.0, 2000.0, 222, 290)
    today = plan_accelerator("h200-sxm", "llama2-70b", t)
    old = plan_accelerator("h200-sxm", "llama2-70b", t, fit="v4.1")
    assert isinstance(today, Option) and isinstance(old, Option)
    assert today.basis == old.basis == "anchored"
    assert today.anchors[0].endswith("(same system)")
    assert all(a.startswith("v4.1-") for a in old.anchors)
    # gpt-oss-120b joined in v6.0: no v4.1 row of it, so that plan is modelled.
    new = plan_accelerator("h200-sxm", "gpt-oss-120b", t, fit="v4.1")
    assert isinstance(new, Option) and new.basis == "modelled" and new.anchors == ()
