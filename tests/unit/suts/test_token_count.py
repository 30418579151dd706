"""Tokenizer sources (a folder, a tokenizer.json, a tiktoken name) and the per-run summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from infermeter.errors import ConfigError
from infermeter.suts.token_count import (
    TokenTally,
    describe,
    gap_warning,
    is_estimate,
    load_tokenizer,
    merge_tallies,
)


def _tokenizer_json(folder: Path) -> Path:
    tokenizers = pytest.importorskip("tokenizers")
    model = tokenizers.models.WordLevel({"a": 0, "b": 1, "[UNK]": 2}, unk_token="[UNK]")
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = folder / "tokenizer.json"
    tok.save(str(path))
    return path


def test_a_folder_or_its_tokenizer_json(tmp_path: Path) -> None:
    path = _tokenizer_json(tmp_path)
    for spec in (str(tmp_path), str(path)):
        tok = load_tokenizer(spec)
        assert tok.count("a b a zz") == 4 and tok.name.endswith("tokenizer.json")


def test_a_missing_path_or_a_folder_without_tokenizer_json_is_one_line(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"has no tokenizer\.json"):
        load_tokenizer(str(tmp_path))
    with pytest.raises(ConfigError, match="does not exist"):
        load_tokenizer(str(tmp_path / "nope" / "tokenizer.json"))


def test_a_tiktoken_encoding_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    # A small local encoding stands in for a named one (nothing is downloaded).
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    local = tiktoken.Encoding(
        "tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}
    )
    asked: list[str] = []

    def get_encoding(name: str) -> object:
        asked.append(name)
        return local

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    tok = load_tokenizer("cl100k_base")
    assert asked == ["cl100k_base"] and tok.name == "tiktoken:cl100k_base"
    assert tok.count("ab ab") == 3  # "ab", " ", "ab"


def test_the_summary_names_each_source_and_flags_estimates() -> None:
    tally = TokenTally(from_usage=3, from_delta_events=1)
    counts = tally.as_dict()
    assert counts["source"] == "mixed" and is_estimate(counts)
    assert describe(counts) == (
        "token counts: server usage for 3 of 4 samples; "
        "one per streamed token chunk (estimate) for 1 of 4 samples"
    )
    merged = merge_tallies([TokenTally(from_usage=2).as_dict(), counts])
    assert merged["source"] == "mixed" and merged["samples"]["usage"] == 5
    assert not is_estimate(TokenTally(from_usage=1).as_dict())


def test_the_tokenizer_usage_gap_survives_merging_client_processes() -> None:
    a = TokenTally(from_usage=2, both_samples=2, usage_tokens=100, tokenizer_tokens=150)
    b = TokenTally(from_usage=2, both_samples=2, usage_tokens=100, tokenizer_tokens=250)
    merged = merge_tallies([a.as_dict(), b.as_dict()])
    assert merged["usage_vs_tokenizer_samples"] == 4
    assert merged["usage_vs_tokenizer_tokens"] == [200, 400]
    assert merged["usage_vs_tokenizer_discrepancy"] == pytest.approx(1.0)


def test_a_gap_beyond_five_percent_is_a_warning_that_names_both_counts() -> None:
    near = TokenTally(
        from_usage=4, both_samples=4, usage_tokens=100, tokenizer_tokens=104
    )
    assert gap_warning(near.as_dict()) is None
    far = TokenTally(
        from_usage=4, both_samples=4, usage_tokens=100, tokenizer_tokens=40
    )
    far.tokenizer = "tokenizers:t.json"
    line = gap_warning(far.as_dict())
    assert line is not None
    assert "-60.0%" in line and "over 4 samples" in line and "t.json" in line
    assert gap_warning(TokenTally(from_usage=4).as_dict()) is None  # no tokenizer


class _Words:
    """A tokenizer that counts words and its own calls."""

    name = "words"

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


def test_usage_checks_wait_until_after_the_load_with_the_same_figures() -> None:
    from infermeter.suts.sse import StreamOutcome
    from infermeter.suts.token_count import count_tokens, recount_later

    answers = [
        StreamOutcome("a b c", 3, 3, "stop", 3),  # usage: the tokenizer only checks it
        StreamOutcome("a b", 2, 5, "stop", 2),
        StreamOutcome("a b c d", 4, None, "stop", 4),  # no usage: counted at once
    ]
    now, later_tok = _Words(), _Words()
    now_tally, later_tally = TokenTally(), TokenTally()
    later: list[tuple[int, str]] = []
    got_now = [count_tokens(a, now, now_tally) for a in answers]
    got_later = [count_tokens(a, later_tok, later_tally, later) for a in answers]
    assert got_now == got_later == [(3, "usage"), (5, "usage"), (4, "tokenizer")]
    assert later_tok.calls == 1  # only the sample that needed it, in the window
    recount_later(later_tally, later_tok, later)
    assert later == [] and later_tok.calls == 3
    assert later_tally.as_dict() == now_tally.as_dict()
    assert later_tally.as_dict()["usage_vs_tokenizer_tokens"] == [8, 5]
