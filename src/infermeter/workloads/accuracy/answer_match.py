"""Exact match after answer extraction (GSM8K style).

extract(text): the number after the last ``####`` marker if present, else the
last number in the text (commas, ``$`` and a trailing ``.`` removed).
EM = 100 x |{i : extract(pred_i) == extract(ref_i)}| / N, numbers compared as
decimals (``42`` == ``42.0``); non-numeric answers compare as stripped,
lower-cased text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?")
_MARKER = "####"


def extract_answer(text: str) -> str:
    """The final answer in ``text`` (see the module docstring)."""
    if _MARKER in text:
        text = text.rsplit(_MARKER, 1)[1]
        numbers = _NUMBER.findall(text)
        return _clean(numbers[0]) if numbers else text.strip().lower()
    numbers = _NUMBER.findall(text)
    return _clean(numbers[-1]) if numbers else text.strip().lower()


def _clean(number: str) -> str:
    number = number.replace(",", "").replace("$", "").rstrip(".")
    try:
        return str(Decimal(number).normalize())
    except InvalidOperation:
        return number


def answers_match(prediction: str, reference: str) -> bool:
    """Whether the extracted answers are equal."""
    return extract_answer(prediction) == extract_answer(reference)


def exact_match(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Percentage of predictions whose extracted answer equals the reference's."""
    if len(predictions) != len(references):
        raise ValueError("predictions and references differ in length")
    if not predictions:
        return 0.0
    hits = sum(
        answers_match(p, r) for p, r in zip(predictions, references, strict=True)
    )
    return 100.0 * hits / len(predictions)
