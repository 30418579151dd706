"""Synthetic prompts whose length is counted in a real tokenizer's tokens.

Random words are one token each only on infermeter's mock; a real tokenizer
splits ``w123`` into two or three. With the user's tokenizer, prompts are
built from common words the tokenizer keeps whole and then trimmed or padded
until the tokenizer counts exactly the asked-for length.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from infermeter.errors import ConfigError
from infermeter.suts.prompts import Prompt, per_sample_lengths
from infermeter.suts.token_count import Tokenizer

_COMMON = (
    "the of and to in is it you that he was for on are with as his they be at "
    "one have this from or had by hot word but what some we can out other were "
    "all there when up use your how said an each she which do their time if will "
    "way about many then them write would like so these her long make thing see "
    "him two has look more day could go come did number sound no most people my "
    "over know water than call first who may down side been now find any new "
    "work part take get place made live where after back little only round man "
    "year came show every good me give our under name very through just form "
    "great think say help low line differ turn cause much mean before move right "
    "boy old too same tell"
)
WORDS = tuple(_COMMON.split())
MAX_ADJUST = 64


class TokenSizedPrompts:
    """Seeded prompts of exactly ``input_tokens`` tokens under ``tokenizer``."""

    def __init__(
        self,
        count: int,
        tokenizer: Tokenizer,
        *,
        input_tokens: int | Sequence[int] = 128,
        output_tokens: int | Sequence[int] = 32,
        seed: int = 0,
    ) -> None:
        self.count = count
        self.tokenizer = tokenizer
        self._inputs = per_sample_lengths(input_tokens, count)
        self._outputs = per_sample_lengths(output_tokens, count)
        words = [w for w in WORDS if tokenizer.count(" " + w) == 1] or list(WORDS)
        rng = np.random.default_rng(seed)
        longest = int(self._inputs.max(initial=1))
        self._pool = [words[i] for i in rng.integers(0, len(words), size=longest * 2)]
        # Built before the run: tokenizing in the request path would delay sends.
        self._texts = [self._sized(i, int(n)) for i, n in enumerate(self._inputs)]

    def prompt(self, index: int) -> Prompt:
        i = index % self.count
        return Prompt(text=self._texts[i], max_tokens=int(self._outputs[i]))

    def _sized(self, i: int, n: int) -> str:
        start = i % len(self._pool)
        pool = self._pool[start:] + self._pool[:start]
        # The most whole words that stay within n tokens (a byte-level
        # tokenizer splits every word, so k words are not k tokens), then
        # single characters to fill the last few tokens exactly.
        lo, hi = 0, min(n, len(pool))
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.tokenizer.count(" ".join(pool[:mid])) <= n:
                lo = mid
            else:
                hi = mid - 1
        text = " ".join(pool[:lo])
        have = self.tokenizer.count(text) if text else 0
        for _ in range(MAX_ADJUST):
            if have == n:
                return text
            text, have = self._pad(text, have, n)
        raise ConfigError(
            f"Cannot build a prompt of exactly {n} tokens with {self.tokenizer.name}; "
            "pass a dataset or --trace instead"
        )

    def _pad(self, text: str, have: int, n: int) -> tuple[str, int]:
        """``text`` grown by the first piece that adds tokens without passing ``n``."""
        for piece in _PADS:
            longer = text + piece if text else piece.lstrip()
            count = self.tokenizer.count(longer)
            if have < count <= n:
                return longer, count
        raise ConfigError(
            f"Cannot build a prompt of exactly {n} tokens with {self.tokenizer.name}; "
            "pass a dataset or --trace instead"
        )


# Pieces that add one token under most tokenizers: a short word, a letter, a mark.
_PADS = (" a", " the", "a", " I", ".", ",", "!")
