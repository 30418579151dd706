"""Anchored prediction: the nearest published rows carry the level, the model the ratio."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from infermeter.perfmodel.anchor import NEARNESS, Anchors, nearness
from infermeter.perfmodel.calibrate import predict_anchored
from infermeter.perfmodel.fit import Coefficients, predict_log, prepare
from infermeter.perfmodel.published import PublishedRow, Rows

COEF = Coefficients({}, 0, ("v4.1",), "uncalibrated")


def _row(
    rid: str, part: str, count: int, tokens: float, **over: object
) -> PublishedRow:
    base = PublishedRow(
        rid,
        "X",
        part,
        count,
        "llama2-70b",
        "Offline",
        tokens,
        "trt-llm",
        "fp8",
        "",
        round="v4.1",
    )
    return replace(base, **over)  # type: ignore[arg-type]


def _anchors(*rows: PublishedRow) -> Anchors:
    prepared, failed = prepare(rows)
    assert not failed
    return Anchors(prepared, COEF)


def test_nearness_orders_system_part_count_family_and_other_parts() -> None:
    target = _row("t", "h200-sxm", 8, 1.0, round="v5.1")
    found = [
        nearness(target, _row("a", "h200-sxm", 8, 1.0)),
        nearness(target, _row("b", "h200-sxm", 8, 1.0, stack="vllm")),
        nearness(target, _row("c", "h200-sxm", 16, 1.0)),
        nearness(target, _row("d", "h100-sxm", 8, 1.0)),
        nearness(target, _row("e", "mi300x", 8, 1.0, stack="vllm")),
    ]
    assert found == [0, 1, 2, 3, 4] and len(NEARNESS) == 5


def test_one_anchor_predicts_its_value_times_the_models_ratio() -> None:
    anchor = _row("v4.1-0001", "h100-sxm", 8, 20_000.0)
    target = _row("5.1-0001", "h200-sxm", 8, 1.0, round="v5.1")
    [prep] = prepare([target])[0]
    est = _anchors(anchor).estimate(prep)
    [a_prep] = prepare([anchor])[0]
    ratio = math.exp(predict_log(prep, COEF) - predict_log(a_prep, COEF))
    assert est.kind == "anchored" and est.anchors[0].result_id == "v4.1-0001"
    assert est.predicted == pytest.approx(20_000.0 * ratio, rel=1e-9)
    # The anchor moves the prediction off the model's own figure.
    assert abs(est.predicted / est.modelled - 1) > 0.05
    assert "v4.1-0001 (same part family)" in est.named()


def test_nearer_anchors_weigh_more_and_anchors_never_come_from_the_targets_round() -> (
    None
):
    target = _row("5.1-0001", "h200-sxm", 8, 1.0, round="v5.1")
    [prep] = prepare([target])[0]
    same = _row("v4.1-0001", "h200-sxm", 8, 30_000.0)
    other = _row("v4.1-0002", "mi300x", 8, 10_000.0, stack="vllm")
    own_round = _row("5.1-0002", "h200-sxm", 8, 99_000.0, round="v5.1")
    later = _row("6.1-0001", "h200-sxm", 8, 99_000.0, round="v6.1")
    est = _anchors(same, other, own_round, later).estimate(prep)
    assert {a.result_id for a in est.anchors} == {"v4.1-0001", "v4.1-0002"}
    weights = {a.result_id: a.weight for a in est.anchors}
    assert weights["v4.1-0001"] == 16 * weights["v4.1-0002"]
    alone = _anchors(same).estimate(prep).predicted
    assert abs(est.predicted / alone - 1) < abs(est.predicted / 10_000.0 - 1)


def test_older_rounds_count_less_than_the_newest() -> None:
    target = _row("6.1-0001", "h200-sxm", 8, 1.0, round="v6.1")
    [prep] = prepare([target])[0]
    old = _row("v4.1-0001", "h200-sxm", 8, 20_000.0)
    new = _row("5.1-0001", "h200-sxm", 8, 30_000.0, round="v5.1")
    est = _anchors(old, new).estimate(prep)
    weights = {a.round: a.weight for a in est.anchors}
    assert weights["v5.1"] == 2 * weights["v4.1"]


def test_without_an_anchor_the_prediction_is_the_models() -> None:
    target = _row("5.1-0001", "h200-sxm", 8, 1.0, round="v5.1", scenario="Server")
    [prep] = prepare([target])[0]
    est = _anchors(_row("v4.1-0001", "h200-sxm", 8, 20_000.0)).estimate(prep)
    assert est.kind == "modelled" and est.anchors == ()
    assert (
        est.predicted
        == est.modelled
        == pytest.approx(math.exp(predict_log(prep, COEF)))
    )


def test_naive_baseline_copies_the_previous_rounds_same_system_else_part_and_count() -> (
    None
):
    anchors = _anchors(
        _row("v4.1-0001", "h200-sxm", 8, 20_000.0),
        _row("v4.1-0002", "h200-sxm", 8, 22_000.0),
        _row("v4.1-0003", "h200-sxm", 8, 50_000.0, stack="vllm"),
        _row("v4.1-0004", "h100-sxm", 8, 90_000.0),
    )
    target = _row("5.1-0001", "h200-sxm", 8, 1.0, round="v5.1")
    assert anchors.naive(target) == 21_000.0
    assert anchors.naive(replace(target, stack="sglang")) == 22_000.0
    assert anchors.naive(replace(target, count=4)) is None


def test_predict_anchored_reports_kinds_and_the_baseline_beside_the_error() -> None:
    anchors = _anchors(_row("v4.1-0001", "h200-sxm", 8, 20_000.0))
    rows = (
        _row("5.1-0001", "h200-sxm", 8, 24_000.0, round="v5.1"),
        _row("5.1-0001", "h200-sxm", 8, 20_000.0, round="v5.1", scenario="Server"),
    )
    v = predict_anchored(Rows(rows, (), ("v5.1",), "test"), COEF, anchors)
    kinds = {p.row.scenario: p.kind for p in v.predictions}
    assert kinds == {"Offline": "anchored", "Server": "modelled"}
    base = v.baseline()
    assert base.rows == 1 and base.naive == pytest.approx(1 - 20_000 / 24_000)
    assert base.closer + base.naive_closer <= 1
    per_row = v.as_dict()["per_row"]
    assert per_row[0]["anchors"][0]["result_id"] == "v4.1-0001"
    assert per_row[1]["kind"] == "modelled" and per_row[1]["naive_tokens_s"] is None
    bare = predict_anchored(Rows(rows, (), ("v5.1",), "test"), COEF, None)
    assert {p.kind for p in bare.predictions} == {"modelled"}
    assert any("no anchors" in n for n in bare.notes)
