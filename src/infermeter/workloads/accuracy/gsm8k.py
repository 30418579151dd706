"""GSM8K answer extraction as MLPerf's mixtral-8x7b evaluate-accuracy.py does it.

The text before the first "\\nQ:" is searched: the first number after the last
"The answer is" if the model used that phrase, else the last number of the
text; commas are removed and the number compared as a float with the reference
answer. gsm8k = 100 x correct / GSM8K samples.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUMBER = re.compile(r"-?[\d,]*\.?\d+", re.MULTILINE | re.DOTALL | re.IGNORECASE)
DELIMITER = "The answer is"


def extract_number(text: str) -> str:
    """The answer number of a completion ("" when it has none)."""
    text = text.split("\nQ:")[0]
    if DELIMITER in text:
        after: list[str] = _NUMBER.findall(text.split(DELIMITER)[-1])
        if after:
            return after[0].replace(",", "")
    numbers: list[str] = _NUMBER.findall(text)
    return numbers[-1].replace(",", "") if numbers else ""


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def gsm8k_accuracy(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Percentage of completions whose extracted number equals the reference."""
    if not predictions:
        return 0.0
    correct = 0
    for pred, ref in zip(predictions, references, strict=True):
        got = _float(extract_number(pred))
        correct += got is not None and got == _float(ref.replace(",", ""))
    return 100.0 * correct / len(predictions)
