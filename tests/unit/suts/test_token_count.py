"""Tokenizer sources (a folder, a tokenizer.json, a tiktoken name) and the per-run summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from infermeter.errors import ConfigError
from infermeter.suts.token_count import (
    TokenTally,
    describe,
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
