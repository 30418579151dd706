"""ROUGE-1/2/L/Lsum as the MLPerf LLM evaluation scripts compute them.

For each prediction/reference pair, ROUGE-N F1 = 2PR / (P + R) with
P = |n-gram overlap| / |prediction n-grams| and R = |overlap| / |reference n-grams|
(Porter-stemmed, lower-cased tokens: ``rouge-score`` with ``use_stemmer=True``);
ROUGE-L uses the longest common subsequence in place of the n-gram overlap, and
ROUGE-Lsum the union LCS over sentences (one sentence per line). The score is
the mean F1 over pairs x 100, rounded to 4 places.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from infermeter.errors import MissingDependencyError

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
# MLPerf uses nltk.sent_tokenize (punkt data, a download); a split after
# ., ! or ? followed by whitespace gives the same lines on ordinary prose.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> str:
    """One sentence per line, as ROUGE-Lsum expects."""
    return "\n".join(s for s in _SENTENCE_END.split(text.strip()) if s)


def _identical_scores(tokens: int) -> dict[str, float]:
    """F1 per type of a prediction equal to its reference, without the LCS.

    Every n-gram and subsequence matches, so each F1 is 1, except where the
    text has no n-gram of that order (rouge-score then scores 0). The LCS is
    quadratic in pure Python: a SUT that returns the reference (the fake, a
    cache) would otherwise spend minutes proving that texts are equal.
    """
    return {
        "rouge1": float(tokens >= 1),
        "rouge2": float(tokens >= 2),
        "rougeL": float(tokens >= 1),
        "rougeLsum": float(tokens >= 1),
    }


def rouge(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean ROUGE F1 x 100 per type: rouge1, rouge2, rougeL, rougeLsum."""
    try:
        from rouge_score import rouge_scorer, tokenizers
    except ImportError:
        raise MissingDependencyError("rouge-score", "accuracy") from None

    if len(predictions) != len(references):
        raise ValueError("predictions and references differ in length")
    if not predictions:
        return dict.fromkeys(ROUGE_TYPES, 0.0)
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    # Stemming never changes how many tokens a text has: count without it.
    counter = tokenizers.DefaultTokenizer(use_stemmer=False)
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    for pred, ref in zip(predictions, references, strict=True):
        if pred == ref:
            f1 = _identical_scores(len(counter.tokenize(ref)))
        else:
            scores = scorer.score(split_sentences(ref), split_sentences(pred))
            f1 = {key: scores[key].fmeasure for key in ROUGE_TYPES}
        for key in ROUGE_TYPES:
            totals[key] += f1[key]
    return {k: round(v / len(predictions) * 100, 4) for k, v in totals.items()}
