"""Word error rate with jiwer, as MLPerf's speech2text/accuracy_eval.py defines it.

A response is int64 indices into ``LABELS`` (space, a-z, apostrophe, digits and
a few symbols), joined into text. Both texts are normalised (openai-whisper's
``EnglishTextNormalizer`` when that package is installed, as the reference does;
else lower case with punctuation other than apostrophes removed), then words the
hypothesis concatenates or splits (up to 3) are merged as the reference script
does, and jiwer counts the edits. WER = total edits / total reference words over
the log; word_accuracy = 100 - 100 x WER.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from infermeter.workloads.accuracy.optional import require

LABELS = (
    " abcdefghijklmnopqrstuvwxyz'0123456789",
    "$¢£€%+-",
)
ALPHABET = "".join(LABELS)
_PUNCT = re.compile(r"[^\w\s']")
MAX_MERGE = 3


def decode_labels(ids: npt.NDArray[np.int64]) -> str:
    """Text of a response of label indices (out-of-range ids are dropped)."""
    return "".join(ALPHABET[i] for i in ids.tolist() if 0 <= i < len(ALPHABET))


def encode_labels(text: str) -> bytes:
    """Label indices of ``text`` (characters outside the alphabet dropped)."""
    ids = [ALPHABET.index(c) for c in text.lower() if c in ALPHABET]
    return np.asarray(ids, dtype=np.int64).tobytes()


def normalizer() -> tuple[Callable[[str], str], str]:
    """The text normaliser and its name (whisper's when installed)."""
    try:
        from whisper.normalizers import EnglishTextNormalizer
    except ImportError:
        return _basic, "basic (lower case, punctuation removed)"
    english: Callable[[str], str] = EnglishTextNormalizer()
    return english, "whisper EnglishTextNormalizer"


def _basic(text: str) -> str:
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def _merge(ref: list[str], hyp: list[str]) -> tuple[list[str], list[str]]:
    """Align greedily, joining up to 3 words on one side that equal one on the other."""
    out_ref: list[str] = []
    out_hyp: list[str] = []
    i = j = 0
    while i < len(ref) and j < len(hyp):
        step_r, step_h = 1, 1
        if ref[i] != hyp[j]:
            for k in range(1, MAX_MERGE + 1):
                if i + k <= len(ref) and "".join(ref[i : i + k]) == hyp[j]:
                    step_r = k
                    break
                if j + k <= len(hyp) and "".join(hyp[j : j + k]) == ref[i]:
                    step_h = k
                    break
        out_ref.append("".join(ref[i : i + step_r]))
        out_hyp.append("".join(hyp[j : j + step_h]))
        i, j = i + step_r, j + step_h
    return out_ref + ref[i:], out_hyp + hyp[j:]


def word_error_rate(
    hypotheses: Sequence[str], references: Sequence[str]
) -> dict[str, float]:
    """``{"wer", "word_accuracy"}`` in percent over all pairs."""
    jiwer = require("jiwer")
    normalise, _ = normalizer()
    edits = words = 0
    for hyp_text, ref_text in zip(hypotheses, references, strict=True):
        ref, hyp = _merge(normalise(ref_text).split(), normalise(hyp_text).split())
        words += len(normalise(ref_text).split())
        if not ref:
            edits += len(hyp)
            continue
        out = jiwer.process_words(" ".join(ref), " ".join(hyp) if hyp else "")
        edits += out.substitutions + out.deletions + out.insertions
    wer = edits / words if words else 0.0
    return {"wer": 100.0 * wer, "word_accuracy": 100.0 * (1.0 - wer)}
