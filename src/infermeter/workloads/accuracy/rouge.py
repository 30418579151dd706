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

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
# MLPerf uses nltk.sent_tokenize (punkt data, a download); a split after
# ., ! or ? followed by whitespace gives the same lines on ordinary prose.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> str:
    """One sentence per line, as ROUGE-Lsum expects."""
    return "\n".join(s for s in _SENTENCE_END.split(text.strip()) if s)


def rouge(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean ROUGE F1 x 100 per type: rouge1, rouge2, rougeL, rougeLsum."""
    from rouge_score import rouge_scorer

    if len(predictions) != len(references):
        raise ValueError("predictions and references differ in length")
    if not predictions:
        return dict.fromkeys(ROUGE_TYPES, 0.0)
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    for pred, ref in zip(predictions, references, strict=True):
        scores = scorer.score(split_sentences(ref), split_sentences(pred))
        for key in ROUGE_TYPES:
            totals[key] += scores[key].fmeasure
    return {k: round(v / len(predictions) * 100, 4) for k, v in totals.items()}
