"""Tokenizers: a user's ``tokenizer.json`` (``tokenizers`` extra) or the corpus words.

Nothing is downloaded: a tokenizer is a file the user gives, or the word
vocabulary of the corpus infermeter ships (used for synthetic prompts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from infermeter.errors import DatasetError, DatasetPathError, MissingDependencyError

_WORD = re.compile(r"\S+")


class Tokenizer(Protocol):
    """Text <-> token ids."""

    name: str
    vocab_size: int
    eos_id: int | None

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class WordTokenizer:
    """Whitespace words of a fixed vocabulary; id 0 is unknown, id 1 is EOS."""

    UNK = 0
    EOS = 1

    def __init__(self, words: Sequence[str], name: str = "corpus-words") -> None:
        self.name = name
        self._words = ["<unk>", "</s>", *dict.fromkeys(words)]
        self._ids = {w: i for i, w in enumerate(self._words)}
        self.vocab_size = len(self._words)
        self.eos_id: int | None = self.EOS

    def encode(self, text: str) -> list[int]:
        return [self._ids.get(w, self.UNK) for w in _WORD.findall(text)]

    def decode(self, ids: Sequence[int]) -> str:
        words = self._words
        size = len(words)
        return " ".join(words[i] for i in ids if 1 < i < size)


class HFTokenizer:
    """A ``tokenizer.json`` read by the ``tokenizers`` package."""

    def __init__(self, path: Path, raw: Any) -> None:
        self.name = str(path)
        self._tok = raw
        self.vocab_size = int(raw.get_vocab_size(with_added_tokens=True))
        eos = None
        for token in (
            "</s>",
            "<|eot_id|>",
            "<|end_of_text|>",
            "<|endoftext|>",
            "<eos>",
        ):
            found = raw.token_to_id(token)
            if found is not None:
                eos = int(found)
                break
        self.eos_id = eos

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=True))


def load_tokenizer(path: str | Path) -> HFTokenizer:
    """Load a Hugging Face ``tokenizer.json`` (a file, or a directory holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise DatasetPathError(
            f"Tokenizer file {str(path)!r} not found; pass a tokenizer.json."
        )
    try:
        from tokenizers import Tokenizer as RawTokenizer
    except ImportError:
        raise MissingDependencyError("tokenizers", "tokenizers") from None
    try:
        raw = RawTokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises plain Exception subclasses
        raise DatasetError(
            f"Cannot read tokenizer {str(path)!r}: {str(exc).splitlines()[0]}"
        ) from None
    return HFTokenizer(path, raw)


def check_tokenizer_matches(
    tokenizer: Tokenizer, text: str, ids: Sequence[int], *, where: str
) -> None:
    """Fail when ``ids`` cannot come from ``tokenizer`` (out of vocabulary, differ)."""
    if ids and max(ids) >= tokenizer.vocab_size:
        raise DatasetError(
            f"{where}: token id {max(ids)} is outside tokenizer {tokenizer.name!r} "
            f"(vocabulary {tokenizer.vocab_size}); the tokenizer does not match "
            "the dataset."
        )
    encoded = tokenizer.encode(text) if text else []
    # Datasets often store a leading BOS token that encode() leaves out.
    if text and list(ids) != encoded and list(ids[1:]) != encoded:
        raise DatasetError(
            f"{where}: tokenizer {tokenizer.name!r} does not reproduce the dataset's "
            "token ids; pass the tokenizer the dataset was made with."
        )
