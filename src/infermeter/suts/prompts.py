"""What an HTTP SUT sends per sample: the ``PromptSource`` protocol and simple sources.

A QSL (or a dataset) that can say what sample ``i`` asks implements
``PromptSource.prompt(i) -> Prompt``; the HTTP SUT needs nothing else from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


class MediaLike(Protocol):
    """An encoded input file (an image, an audio clip) sent with a prompt."""

    @property
    def data(self) -> bytes: ...

    @property
    def mime(self) -> str: ...

    @property
    def name(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Prompt:
    """One sample's request content.

    Give ``text`` (completions or a one-message chat), ``messages`` (chat) or
    ``token_ids`` (completions only). ``max_tokens`` is the output length the
    benchmark asks for (None: the SUT's default). ``media``: images sent as chat
    content parts, or the audio file of a transcription.
    """

    text: str | None = None
    token_ids: Sequence[int] | None = None
    messages: Sequence[dict[str, str]] | None = None
    max_tokens: int | None = None
    media: Sequence[MediaLike] = ()


@runtime_checkable
class PromptSource(Protocol):
    """Anything that maps a sample index to its prompt (QSLs, datasets, traces)."""

    def prompt(self, index: int) -> Prompt:
        """The prompt of sample ``index``."""
        ...


class SyntheticPrompts:
    """Random-word prompts of fixed or varying lengths, seeded (for load tests).

    Each word is one token on infermeter's mock server; a real tokenizer
    counts them differently, so use a dataset for real models.
    """

    def __init__(
        self,
        count: int,
        *,
        input_tokens: int | Sequence[int] = 128,
        output_tokens: int | Sequence[int] = 32,
        seed: int = 0,
    ) -> None:
        rng = np.random.default_rng(seed)
        self.count = count
        self._inputs = per_sample_lengths(input_tokens, count)
        self._outputs = per_sample_lengths(output_tokens, count)
        self._words = rng.integers(0, 1000, size=int(self._inputs.max(initial=1)))

    def prompt(self, index: int) -> Prompt:
        i = index % self.count
        n = int(self._inputs[i])
        # A per-sample rotation keeps prompts distinct without storing each one.
        words = np.roll(self._words, i)[:n]
        return Prompt(
            text=" ".join(f"w{w}" for w in words.tolist()),
            max_tokens=int(self._outputs[i]),
        )


def per_sample_lengths(value: int | Sequence[int], count: int) -> np.ndarray:
    if isinstance(value, int):
        return np.full(count, value, dtype=np.int64)
    array = np.asarray(value, dtype=np.int64)
    return np.resize(array, count)
