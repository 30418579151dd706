"""Output-token counts: server ``usage`` first, else a local tokenizer, else chunks.

When both ``usage`` and a tokenizer are there, the run keeps both sums and
reports their relative difference (``discrepancy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from infermeter.errors import ConfigError, MissingDependencyError
from infermeter.suts.sse import StreamOutcome


class Tokenizer(Protocol):
    def count(self, text: str) -> int: ...


class FileTokenizer:
    """A Hugging Face ``tokenizer.json`` read with the ``tokenizers`` package."""

    def __init__(self, path: str) -> None:
        try:
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError:
            raise MissingDependencyError("tokenizers", "tokenizers") from None
        try:
            self._tok = HFTokenizer.from_file(path)
        except Exception as exc:  # the library raises plain Exception
            raise ConfigError(
                f"Cannot load tokenizer file {path!r}: {exc}; give a tokenizer.json"
            ) from None

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)


@dataclass(slots=True)
class TokenTally:
    """Per-run sums by source; ``discrepancy`` = (tokenizer - usage) / usage."""

    usage_tokens: int = 0
    tokenizer_tokens: int = 0
    both_samples: int = 0
    from_usage: int = 0
    from_tokenizer: int = 0
    from_chunks: int = 0

    @property
    def discrepancy(self) -> float | None:
        if not self.both_samples or not self.usage_tokens:
            return None
        return (self.tokenizer_tokens - self.usage_tokens) / self.usage_tokens

    def as_dict(self) -> dict[str, object]:
        return {
            "from_usage": self.from_usage,
            "from_tokenizer": self.from_tokenizer,
            "from_chunks": self.from_chunks,
            "usage_vs_tokenizer_samples": self.both_samples,
            "usage_vs_tokenizer_discrepancy": self.discrepancy,
        }


def count_tokens(
    outcome: StreamOutcome, tokenizer: Tokenizer | None, tally: TokenTally
) -> int:
    """The sample's output-token count, updating ``tally``."""
    local = tokenizer.count(outcome.text) if tokenizer is not None else None
    if outcome.usage_tokens is not None:
        tally.from_usage += 1
        if local is not None:
            tally.both_samples += 1
            tally.usage_tokens += outcome.usage_tokens
            tally.tokenizer_tokens += local
        return outcome.usage_tokens
    if local is not None:
        tally.from_tokenizer += 1
        return local
    tally.from_chunks += 1
    return outcome.fragments
