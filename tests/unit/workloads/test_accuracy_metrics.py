"""Accuracy metrics reproduce known values on fixed examples."""

from __future__ import annotations

import numpy as np
import pytest
from rouge_score import rouge_scorer

from infermeter.workloads.accuracy import answer_match, rouge, squad, tokens, topk

PAIRS = [
    ("the cat sat on the mat", "the cat is on the mat"),
    (
        "Rain is expected tomorrow. Winds will be strong.",
        "Strong winds and rain are forecast for tomorrow. Take care.",
    ),
    (
        "The engineers measured the running systems carefully.",
        "Engineers measure systems before they trust them.",
    ),
]


def test_rouge_hand_computed_values() -> None:
    # unigram overlap 5 of 6 both ways; bigram overlap 3 of 5; LCS 5 of 6
    scores = rouge.rouge([PAIRS[0][0]], [PAIRS[0][1]])
    assert scores["rouge1"] == pytest.approx(83.3333)
    assert scores["rouge2"] == pytest.approx(60.0)
    assert scores["rougeL"] == pytest.approx(83.3333)


def test_rouge_matches_rouge_score_package() -> None:
    scorer = rouge_scorer.RougeScorer(list(rouge.ROUGE_TYPES), use_stemmer=True)
    expected = dict.fromkeys(rouge.ROUGE_TYPES, 0.0)
    for pred, ref in PAIRS:
        result = scorer.score(rouge.split_sentences(ref), rouge.split_sentences(pred))
        for key in expected:
            expected[key] += result[key].fmeasure / len(PAIRS)
    ours = rouge.rouge([p for p, _ in PAIRS], [r for _, r in PAIRS])
    for key, value in expected.items():
        assert ours[key] == pytest.approx(round(value * 100, 4))
    # stemming is on: "measured" matches "measure"
    assert ours["rouge1"] > 0


def test_rouge_lsum_uses_sentence_lines() -> None:
    assert rouge.split_sentences("One. Two!  Three?") == "One.\nTwo!\nThree?"
    same = rouge.rouge(["a b. c d."], ["a b. c d."])
    assert same == {
        "rouge1": 100.0,
        "rouge2": 100.0,
        "rougeL": 100.0,
        "rougeLsum": 100.0,
    }


@pytest.mark.parametrize(
    "text",
    ["", " ", "...", "a", "Running!", "a b", "the the the", "Cats ran. Dogs ran!",
     "x1 y2\nz3", "naïve café 東京 ok", "One. Two!  Three? Four"],
)  # fmt: skip
def test_an_answer_equal_to_its_reference_scores_as_rouge_score_does(text: str) -> None:
    # Equal texts skip the LCS; their scores must be the package's own.
    scorer = rouge_scorer.RougeScorer(list(rouge.ROUGE_TYPES), use_stemmer=True)
    lines = rouge.split_sentences(text)
    expected = {
        k: round(v.fmeasure * 100, 4) for k, v in scorer.score(lines, lines).items()
    }
    assert rouge.rouge([text], [text]) == expected


def test_squad_known_answers() -> None:
    assert squad.normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert squad.exact_match_score("the Eiffel Tower", "Eiffel Tower") == 1.0
    assert squad.f1_score("in Paris France", "Paris") == pytest.approx(0.5)
    assert squad.f1_score("London", "Paris") == 0.0
    scores = squad.squad_scores(
        ["Eiffel Tower", "in Paris France", "1889"],
        [("the Eiffel Tower",), ("Paris", "Paris, France"), ("1887",)],
    )
    # EM: 1 + 0 + 0; F1: 1 + max(0.5, 2*1*(2/3)/(1+2/3)=0.8) + 0
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 0.8) / 3)


def test_top_k() -> None:
    preds = [
        np.array([3, 1, 2, 7, 9], np.float32),
        np.array([5, 4, 3, 2, 1], np.float32),
    ]
    assert topk.top_k(preds, [3, 1], 1) == 50.0
    assert topk.top_k(preds, [3, 1], 5) == 100.0
    assert topk.top_k([], [], 1) == 0.0


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("so the total is 1,234 apples\n#### 1,234", "1234"),
        ("The answer is $18.", "18"),
        ("She has 3 cats and 42.0 dogs", "42"),
        ("no numbers here", "no numbers here"),
    ],
)
def test_answer_extraction(text: str, answer: str) -> None:
    assert answer_match.extract_answer(text) == answer


def test_exact_match_gsm8k_style() -> None:
    preds = ["Step 1... The answer is 18", "#### 7", "I think 5"]
    refs = ["Janet sells 18 eggs.\n#### 18", "#### 8", "#### 5.00"]
    assert answer_match.exact_match(preds, refs) == pytest.approx(200 / 3)


def test_token_metrics() -> None:
    assert tokens.tokens_per_sample([294, 295]) == 294.5
    assert tokens.tokens_per_sample([1, 1, 2]) == 1.3
    assert tokens.gen_len(["abc", "de"]) == 5
