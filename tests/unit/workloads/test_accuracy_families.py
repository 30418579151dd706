"""Each metric family on a fixture whose value is computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.workloads.accuracy import gsm8k, reasoning, segmentation
from infermeter.workloads.datasets.base import Boxes


def _boxes(rows, labels, width=100, height=100, image_id=1) -> Boxes:
    return Boxes(
        np.asarray(rows, np.float32),
        np.asarray(labels, np.int64),
        width,
        height,
        image_id,
    )


def test_map_hand_computed() -> None:
    pytest.importorskip("pycocotools")
    from infermeter.workloads.accuracy.detection import (
        encode_detections,
        mean_average_precision,
    )

    refs = {
        0: _boxes([[0.1, 0.1, 0.5, 0.5], [0.6, 0.6, 0.9, 0.9]], [1, 2]),
        1: _boxes([[0.2, 0.2, 0.4, 0.6]], [1], width=200, image_id=2),
    }

    def resp(i: int, keep: int | None = None):
        data = np.frombuffer(encode_detections(i, refs[i]), np.float32)
        return i, data if keep is None else data[: 7 * keep]

    assert mean_average_precision([resp(0), resp(1)], refs) == pytest.approx(100.0)
    # Category 1: both boxes found (AP 1); category 2: its only box missed (AP 0).
    assert mean_average_precision([resp(0, 1), resp(1)], refs) == pytest.approx(50.0)
    # Image 0 without detections: category 1 finds 1 of its 2 boxes at precision 1,
    # so COCO's 101-point interpolated AP is 51/101 (recall 0..0.50); category 2
    # finds none (AP 0). mAP = (51/101 + 0) / 2.
    empty = (0, np.zeros(0, np.float32))
    assert mean_average_precision([empty, resp(1)], refs) == pytest.approx(
        100 * 51 / 101 / 2
    )


def test_auc_hand_computed() -> None:
    pytest.importorskip("sklearn")
    from infermeter.workloads.accuracy.clicks import click_metrics, split_pairs

    # Positive/negative pairs ranked right: (0.35>0.1), (0.8>0.1), (0.8>0.4); wrong:
    # (0.35<0.4). AUC = 3/4; rounded predictions 0,0,0,1 vs labels 0,0,1,1: 3/4.
    pred = np.asarray([0.1, 0.4, 0.35, 0.8], np.float32)
    labels = np.asarray([0, 0, 1, 1], np.float32)
    interleaved = np.stack([pred, labels], axis=1).ravel()
    p, t = split_pairs(interleaved, None, 0)
    assert click_metrics([p], [t]) == {"auc": 75.0, "accuracy": 75.0}
    p, t = split_pairs(pred, labels, 0)  # predictions only: labels from the dataset
    assert click_metrics([p[:2], p[2:]], [t[:2], t[2:]])["auc"] == 75.0


def test_dice_hand_computed() -> None:
    target = np.zeros((2, 2, 2), np.uint8)
    target[0] = 1  # 4 kidney voxels
    target[1, 0, 0] = 2  # 1 tumour voxel
    pred = np.zeros_like(target)
    pred[0, 0] = 1  # 2 kidney voxels, both right; tumour missed
    kidney, tumour = segmentation.case_dice(pred, target)
    assert kidney == pytest.approx((2 * 2 + 1e-6) / (4 + 2 + 1e-6))
    assert tumour == pytest.approx(1e-6 / (1 + 1e-6))
    assert segmentation.mean_dice([pred, target], [target, target])["dice"] == (
        pytest.approx(((kidney + tumour) / 2 + 1.0) / 2)
    )
    # A class absent from both masks scores 1, as the reference's smoothing gives.
    empty = np.zeros((2, 2, 2), np.uint8)
    assert segmentation.case_dice(empty, empty) == (1.0, 1.0)


def test_wer_hand_computed() -> None:
    pytest.importorskip("jiwer")
    from infermeter.workloads.accuracy.speech import (
        decode_labels,
        encode_labels,
        word_error_rate,
    )

    ref = "the cat sat on the mat"
    assert word_error_rate([ref], [ref])["wer"] == 0.0
    assert word_error_rate(["the cat sat on a mat"], [ref])["wer"] == pytest.approx(
        100 / 6
    )
    # Joined words count as right, as the reference script merges them.
    assert word_error_rate(["the cat saton the mat"], [ref])["wer"] == 0.0
    # Corpus level: (1 + 0) edits over (6 + 3) words.
    both = word_error_rate(["the cat sat on a mat", "a b c"], [ref, "a b c"])
    assert both["wer"] == pytest.approx(100 / 9)
    assert both["word_accuracy"] == pytest.approx(100 - 100 / 9)
    ids = np.frombuffer(encode_labels("Don't panic, 42!"), np.int64)
    assert decode_labels(ids) == "don't panic 42"


def test_gsm8k_extraction_as_mixtral_reference() -> None:
    assert gsm8k.extract_number("3+4=7. The answer is 1,234.\nQ: then 99") == "1234"
    assert gsm8k.extract_number("first 5 then 12 apples") == "12"
    assert gsm8k.extract_number("no digits") == ""
    assert gsm8k.gsm8k_accuracy(
        ["The answer is 42.", "so 7", "none"], ["42", "8", "3"]
    ) == pytest.approx(100 / 3)


def test_reasoning_parsers_and_grades() -> None:
    assert reasoning.parse_choice("so ANSWER: (C) done") == "C"
    assert reasoning.parse_choice("it is J", "J") == "J"
    assert reasoning.parse_choice("it is J") is None  # GPQA: A-D only, no bare letter
    assert reasoning.parse_boxed(r"x \boxed{\frac{1}{2}} y") == r"\frac{1}{2}"
    assert reasoning.parse_aime(r"\boxed{ 123 }") == 123
    assert reasoning.parse_aime("Answer: 1234") is None  # outside 0-999
    value, graded, skipped = reasoning.grade(
        [r"\boxed{\dfrac{1}{2}}", "ANSWER: A", "Answer: 5", "```python\n```"],
        [r"\frac{1}{2}", "B", "5", "x"],
        ["math500", "gpqa", "aime", "livecodebench"],
    )
    assert (value, graded, skipped) == (pytest.approx(200 / 3), 3, 1)


def test_hierarchical_f1_hand_computed() -> None:
    from infermeter.workloads.accuracy import vlm

    answers = [
        vlm.encode_answer("a > b > c").decode(),  # 3 of 3 right
        vlm.encode_answer("a > x").decode(),  # 1 right, 2 predicted, truth 3 deep
        "not json",  # padded: 2 predicted (truth depth), none right
    ]
    truths = ["a > b > c", "a > b > d", "e > f"]
    # common 3 + 1 + 0 = 4; predicted 3 + 2 + 2 = 7; true 3 + 3 + 2 = 8.
    hp, hr = 4 / 7, 4 / 8
    assert vlm.hierarchical_f1(answers, truths) == pytest.approx(
        2 * hp * hr / (hp + hr)
    )
