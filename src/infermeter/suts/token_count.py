"""Output-token counts, from the best source a response offers, always named.

In order: the server's ``usage`` (when the stream or body carried it); else a
tokenizer the user gave re-counting the generated text; else, for a stream,
one token per token-bearing chunk (an estimate: a chunk with empty text
counts, since servers such as llama.cpp send one for a token that ends inside
a multi-byte UTF-8 character; role-only and finish-only chunks do not).
When both ``usage`` and a tokenizer are there, the run keeps both sums and
reports their relative difference (``discrepancy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from infermeter.errors import ConfigError, MissingDependencyError
from infermeter.suts.sse import StreamOutcome

USAGE = "usage"
TOKENIZER = "tokenizer"
DELTA_EVENTS = "delta_events"
RESPONSES = "responses"
# What each source is called where people read it.
SOURCE_LABELS = {
    USAGE: "server usage",
    TOKENIZER: "tokenizer re-count",
    DELTA_EVENTS: "one per streamed token chunk (estimate)",
    RESPONSES: "unknown: one per non-streamed response (no usage, no tokenizer)",
}
ESTIMATES = (DELTA_EVENTS, RESPONSES)
TOKEN_GAP = 0.05  # tokenizer vs usage: beyond this the run says so


class Tokenizer(Protocol):
    name: str

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
        self.name = f"tokenizers:{path}"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)


class TiktokenTokenizer:
    """A tiktoken encoding by name (``cl100k_base``, ``o200k_base``, ...)."""

    def __init__(self, encoding: str) -> None:
        try:
            import tiktoken
        except ImportError:
            raise MissingDependencyError("tiktoken", "tiktoken") from None
        try:
            self._enc = tiktoken.get_encoding(encoding)
        except Exception as exc:  # tiktoken raises ValueError or network errors
            raise ConfigError(
                f"Cannot load tiktoken encoding {encoding!r}: {exc}"
            ) from None
        self.name = f"tiktoken:{encoding}"

    def count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))


def load_tokenizer(spec: str) -> Tokenizer:
    """A folder holding ``tokenizer.json``, such a file, or a tiktoken encoding name."""
    path = Path(spec).expanduser()
    if path.is_dir():
        file = path / "tokenizer.json"
        if not file.is_file():
            raise ConfigError(
                f"Tokenizer folder {spec!r} has no tokenizer.json; "
                "pass the model's folder or its tokenizer.json"
            )
        return FileTokenizer(str(file))
    if path.is_file():
        return FileTokenizer(str(path))
    if "/" in spec or spec.endswith(".json"):
        raise ConfigError(
            f"Tokenizer {spec!r} does not exist; pass a folder with tokenizer.json, "
            "a tokenizer.json file, or a tiktoken encoding name such as cl100k_base"
        )
    return TiktokenTokenizer(spec)


@dataclass(slots=True)
class TokenTally:
    """Per-run counts by source; ``discrepancy`` = (tokenizer - usage) / usage."""

    usage_tokens: int = 0
    tokenizer_tokens: int = 0
    both_samples: int = 0
    from_usage: int = 0
    from_tokenizer: int = 0
    from_delta_events: int = 0
    from_responses: int = 0
    tokenizer: str | None = None

    @property
    def discrepancy(self) -> float | None:
        if not self.both_samples or not self.usage_tokens:
            return None
        return (self.tokenizer_tokens - self.usage_tokens) / self.usage_tokens

    def samples_by_source(self) -> dict[str, int]:
        return {
            USAGE: self.from_usage,
            TOKENIZER: self.from_tokenizer,
            DELTA_EVENTS: self.from_delta_events,
            RESPONSES: self.from_responses,
        }

    def as_dict(self) -> dict[str, Any]:
        counts = self.samples_by_source()
        return {
            "source": source_of(counts),
            "samples": counts,
            "tokenizer": self.tokenizer,
            "usage_vs_tokenizer_samples": self.both_samples,
            "usage_vs_tokenizer_tokens": [self.usage_tokens, self.tokenizer_tokens],
            "usage_vs_tokenizer_discrepancy": self.discrepancy,
        }


def source_of(counts: dict[str, int]) -> str | None:
    """The one source every counted sample used, ``mixed``, or None (no samples)."""
    used = [name for name, n in counts.items() if n]
    if not used:
        return None
    return used[0] if len(used) == 1 else "mixed"


def merge_tallies(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``as_dict`` from several (e.g. one per client process)."""
    counts = dict.fromkeys(SOURCE_LABELS, 0)
    for part in parts:
        for name, n in (part.get("samples") or {}).items():
            counts[name] = counts.get(name, 0) + int(n)
    tokenizers = {p.get("tokenizer") for p in parts} - {None}
    pairs = [p.get("usage_vs_tokenizer_tokens") or (0, 0) for p in parts]
    both = TokenTally(
        usage_tokens=sum(int(usage) for usage, _ in pairs),
        tokenizer_tokens=sum(int(local) for _, local in pairs),
        both_samples=sum(int(p.get("usage_vs_tokenizer_samples") or 0) for p in parts),
    )
    return {
        "source": source_of(counts),
        "samples": counts,
        "tokenizer": tokenizers.pop() if len(tokenizers) == 1 else None,
        "usage_vs_tokenizer_samples": both.both_samples,
        "usage_vs_tokenizer_tokens": [both.usage_tokens, both.tokenizer_tokens],
        "usage_vs_tokenizer_discrepancy": both.discrepancy,
    }


def gap_warning(counts: dict[str, Any]) -> str | None:
    """A warning when the tokenizer's re-count and the server's usage disagree by
    more than ``TOKEN_GAP``: a tokenizer of another model, or streamed text that is
    not what the server counted (transformers serve drops chunks under load; a
    byte-level model's partial characters come back as U+FFFD, three bytes each)."""
    gap = counts.get("usage_vs_tokenizer_discrepancy")
    if gap is None or abs(gap) <= TOKEN_GAP:
        return None
    n = int(counts.get("usage_vs_tokenizer_samples") or 0)
    return (
        f"the tokenizer ({counts.get('tokenizer')}) counts {gap:+.1%} tokens against "
        f"the server's usage over {n:,} samples: a tokenizer of another model, or "
        "streamed text that is not what the server counted (chunks dropped, bytes "
        "decoded lossily); tokens/s and TPOT use the server's usage"
    )


def describe(counts: dict[str, Any]) -> str:
    """One line for people: where the run's token counts came from."""
    samples = {k: int(v) for k, v in (counts.get("samples") or {}).items() if v}
    total = sum(samples.values())
    if not total:
        return "token counts: no sample completed"
    parts = []
    for name, n in sorted(samples.items(), key=lambda kv: -kv[1]):
        label = SOURCE_LABELS.get(name, name)
        if name == TOKENIZER and counts.get("tokenizer"):
            label += f" ({counts['tokenizer']})"
        parts.append(f"{label} for {n:,} of {total:,} samples")
    return "token counts: " + "; ".join(parts)


def is_estimate(counts: dict[str, Any]) -> bool:
    """True when some sample's count is an estimate, not the server's or a tokenizer's."""
    samples = counts.get("samples") or {}
    return any(samples.get(name) for name in ESTIMATES)


def count_tokens(
    outcome: StreamOutcome,
    tokenizer: Tokenizer | None,
    tally: TokenTally,
    later: list[tuple[int, str]] | None = None,
) -> tuple[int, str]:
    """The answer's output-token count and its source, updating ``tally``.

    With ``later``, a re-count that only checks the server's usage (the
    sample's count is usage's) is not done now: (usage, text) is kept there
    for ``recount_later`` after the load, so the tokenizer stays out of the
    timed window. The figures are the same either way.
    """
    if outcome.usage_tokens is not None:
        tally.from_usage += 1
        if tokenizer is not None:
            if later is not None:
                later.append((outcome.usage_tokens, outcome.text))
            else:
                _both(tally, outcome.usage_tokens, tokenizer.count(outcome.text))
        return outcome.usage_tokens, USAGE
    if tokenizer is not None:
        tally.from_tokenizer += 1
        return tokenizer.count(outcome.text), TOKENIZER
    if outcome.streamed:
        tally.from_delta_events += 1
        return outcome.token_events, DELTA_EVENTS
    tally.from_responses += 1
    return outcome.token_events, RESPONSES


def recount_later(
    tally: TokenTally, tokenizer: Tokenizer | None, later: list[tuple[int, str]]
) -> None:
    """Do the usage checks ``count_tokens`` left in ``later`` (emptied)."""
    while later:
        usage, text = later.pop()
        if tokenizer is not None:
            _both(tally, usage, tokenizer.count(text))


def _both(tally: TokenTally, usage: int, local: int) -> None:
    tally.both_samples += 1
    tally.usage_tokens += usage
    tally.tokenizer_tokens += local
