"""SQuAD v1.1 exact match and F1 (the official evaluate-v1.1 definitions).

normalize(s): lower-case, drop punctuation, drop the articles a/an/the, collapse
whitespace. EM = 1 if normalize(pred) == normalize(truth). F1 over normalized
tokens: common = |pred ∩ truth| (multiset), P = common/|pred|, R = common/|truth|,
F1 = 2PR/(P+R) (0 when common = 0). Each question takes the maximum over its
ground truths; the dataset score is the mean x 100.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, strip punctuation and articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction: str, truth: str) -> float:
    """1.0 when the normalized strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(truth))


def f1_score(prediction: str, truth: str) -> float:
    """Token-overlap F1 of two answers after normalization."""
    pred = normalize_answer(prediction).split()
    gold = normalize_answer(truth).split()
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_scores(
    predictions: Sequence[str], truths: Sequence[Sequence[str]]
) -> dict[str, float]:
    """``{"exact_match": EM, "f1": F1}``, each the mean over questions x 100."""
    if len(predictions) != len(truths):
        raise ValueError("predictions and truths differ in length")
    if not predictions:
        return {"exact_match": 0.0, "f1": 0.0}
    em = f1 = 0.0
    for pred, answers in zip(predictions, truths, strict=True):
        em += max((exact_match_score(pred, a) for a in answers), default=0.0)
        f1 += max((f1_score(pred, a) for a in answers), default=0.0)
    n = len(predictions)
    return {"exact_match": 100.0 * em / n, "f1": 100.0 * f1 / n}
