"""Prompts of exactly N tokens under tokenizers that split words their own ways."""

from __future__ import annotations

import math

import pytest

from infermeter.errors import ConfigError
from infermeter.suts.sized_prompts import TokenSizedPrompts


class Words:
    """One token per whitespace-separated word (what the mock counts)."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class Bytes:
    """Every character a token: the far end of a byte-level tokenizer."""

    name = "bytes"

    def count(self, text: str) -> int:
        return len(text.encode())


class Pairs:
    """Each word ceil(len / 2) tokens, a leading space part of the word: no
    common word is one token, as with a byte-level BPE trained on little text."""

    name = "pairs"

    def count(self, text: str) -> int:
        return sum(math.ceil(len(w) / 2) for w in text.split())


class Never:
    """Counts only even numbers of tokens: an odd length cannot be built."""

    name = "never"

    def count(self, text: str) -> int:
        return 2 * len(text.split())


@pytest.mark.parametrize("tokenizer", [Words(), Bytes(), Pairs()])
@pytest.mark.parametrize("length", [1, 7, 128, 1000])
def test_every_prompt_counts_exactly_the_asked_length(
    tokenizer: Words | Bytes | Pairs, length: int
) -> None:
    prompts = TokenSizedPrompts(5, tokenizer, input_tokens=length, seed=3)
    for index in range(5):
        assert tokenizer.count(prompts.prompt(index).text) == length


def test_a_length_no_text_can_reach_is_one_line() -> None:
    with pytest.raises(ConfigError, match="exactly 7 tokens with never"):
        TokenSizedPrompts(2, Never(), input_tokens=7)
