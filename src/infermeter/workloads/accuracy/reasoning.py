"""Exact match for the reasoning benchmarks (deepseek-r1, gpt-oss-120b).

Each sample's sub-dataset picks a parser and a grader, as the references'
eval_accuracy.py do (the first key contained in the lower-cased dataset name):

- gpqa / mmlu_pro: the letter after the last "ANSWER" / "FINAL ANSWER" (A-D, or
  A-J with a bare-letter fallback for MMLU-Pro), compared with the reference.
- aime: the integer in the last ``\\boxed{N}``, else after the last "Answer:",
  within 0-999, compared as an integer.
- math500: the content of the last ``\\boxed{...}`` (braces balanced), compared
  after normalisation (spaces, ``\\left``/``\\right``, ``\\text{}``, ``\\!``, a
  trailing ".0", dollar signs). The reference grades with PRM800K's grader, which
  also accepts sympy-equivalent forms: infermeter does not, so a correct answer
  in another form counts as wrong here.
- livecodebench: needs the LiveCodeBench harness and its hidden tests, which
  infermeter does not have: such samples are not graded (see ``grade``).

exact_match = 100 x correct / graded samples.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

NOT_GRADED = ("livecodebench",)


def parse_choice(text: str, last: str = "D") -> str | None:
    """The chosen letter A..``last`` (MMLU-Pro: bare letters count too)."""
    pattern = (
        rf"\b(?:ANSWER|FINAL\s*ANSWER)\b\s*[:=]?\s*(?:\(?\s*([A-{last}])\s*\)?)"
        r"(?:\s*$|[^A-Za-z])"
    )
    found = list(re.finditer(pattern, text, re.IGNORECASE))
    if found:
        return found[-1].group(1).upper()
    if last == "J":
        bare = list(re.finditer(r"\b([A-J])\b", text, re.IGNORECASE))
        if bare:
            return bare[-1].group(1).upper()
    return None


def parse_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}``, braces balanced."""
    start = text.rfind("\\boxed{")
    if start == -1:
        return None
    depth, i = 0, start + len("\\boxed{")
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            if depth == 0:
                return text[i:j].strip()
            depth -= 1
    return None


def parse_aime(text: str) -> int | None:
    """The AIME integer answer (0-999)."""
    boxed = re.findall(r"\\boxed{\s*(\d+)\s*}", text)
    found = boxed or re.findall(
        r"Answer:\s*(\d+)(?!\.)\b", text, re.IGNORECASE | re.MULTILINE
    )
    if not found:
        return None
    value = int(found[-1])
    return value if 0 <= value <= 999 else None


_LATEX_NOISE = re.compile(r"\\left|\\right|\\!|\\,|\$|\s")
_TEXT = re.compile(r"\\text\{([^}]*)\}")


def normalise_math(answer: str) -> str:
    """A math answer with formatting noise removed (see the module doc)."""
    answer = _TEXT.sub(r"\1", answer)
    answer = _LATEX_NOISE.sub("", answer)
    answer = answer.replace("dfrac", "frac").replace("tfrac", "frac")
    return answer[:-2] if answer.endswith(".0") else answer


@dataclass(frozen=True, slots=True)
class Grader:
    parse: Callable[[str], object]
    correct: Callable[[object, str], bool]


def _choice(last: str, letters: str) -> Grader:
    return Grader(
        lambda t: parse_choice(t, last),
        lambda got, ref: got in tuple(letters) and str(got) == ref.strip().upper(),
    )


def _aime_correct(got: object, ref: str) -> bool:
    try:
        return int(str(got)) == int(ref)
    except ValueError:
        return False


GRADERS: dict[str, Grader] = {
    "gpqa": _choice("D", "ABCD"),
    "mmlu_pro": _choice("J", "ABCDEFGHIJ"),
    "math500": Grader(
        parse_boxed, lambda got, ref: normalise_math(str(got)) == normalise_math(ref)
    ),
    "aime": Grader(parse_aime, _aime_correct),
}


def grader_for(task: str) -> Grader | None:
    """The grader of sub-dataset ``task`` (None: not gradable here)."""
    name = task.lower()
    for key, grader in GRADERS.items():
        if key in name:
            return grader
    return None


def grade(
    predictions: Sequence[str], references: Sequence[str], tasks: Sequence[str]
) -> tuple[float | None, int, int]:
    """(exact_match over graded samples, graded count, ungraded count)."""
    correct = graded = skipped = 0
    for text, ref, task in zip(predictions, references, tasks, strict=True):
        grader = grader_for(task)
        if grader is None:
            skipped += 1
            continue
        graded += 1
        got = grader.parse(text)
        correct += got is not None and grader.correct(got, ref)
    return (100.0 * correct / graded if graded else None), graded, skipped
