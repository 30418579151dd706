"""Datasets: MLPerf formats, custom files with column mapping, synthetic, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from infermeter.errors import ConfigError, DatasetError
from infermeter.loadgen.interfaces import QuerySampleLibrary
from infermeter.workloads import get_benchmark
from infermeter.workloads.datasets import DatasetOptions, build_qsl, parse_length
from infermeter.workloads.datasets.synthetic import corpus_tokenizer

LLAMA = get_benchmark("llama2-70b")
# Pickles are read only when the user trusts them (--allow-pickle).
TRUSTED = DatasetOptions(allow_pickle=True)


def trusted(**options: object) -> DatasetOptions:
    return DatasetOptions(allow_pickle=True, **options)  # type: ignore[arg-type]


def _idx(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def test_synthetic_is_deterministic_and_sized() -> None:
    opts = DatasetOptions(
        samples=20,
        input_len=parse_length("uniform:10:30"),
        output_len=parse_length("fixed:7"),
        seed=3,
    )
    a, b = build_qsl(LLAMA, options=opts), build_qsl(LLAMA, options=opts)
    assert isinstance(a, QuerySampleLibrary)
    assert a.total_sample_count == 20
    for i in range(20):
        sa, sb = a.sample(i), b.sample(i)
        assert sa.prompt == sb.prompt
        assert 10 <= sa.input_tokens <= 30
        assert sa.output_tokens == 7
        # the prompt text re-encodes to exactly its ids
        assert corpus_tokenizer().encode(sa.prompt) == sa.input_ids.tolist()
    other = build_qsl(LLAMA, options=DatasetOptions(samples=20, seed=4))
    assert other.sample(0).prompt != a.sample(0).prompt


def test_synthetic_default_uses_benchmark_lengths() -> None:
    qsl = build_qsl(LLAMA, options=DatasetOptions(samples=2))
    assert qsl.sample(0).input_tokens == 600
    assert qsl.sample(0).output_tokens == 294


def test_shared_prefix_groups() -> None:
    opts = DatasetOptions(
        samples=6,
        input_len=parse_length("fixed:40"),
        shared_prefix_tokens=16,
        num_prefixes=2,
    )
    qsl = build_qsl(LLAMA, options=opts)
    heads = [tuple(qsl.sample(i).input_ids[:16]) for i in range(6)]
    assert heads[0] == heads[2] == heads[4]
    assert heads[1] == heads[3] == heads[5]
    assert heads[0] != heads[1]
    assert qsl.sample(0).input_tokens == 40


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("normal:100:10", 40, 160),
        ("lognormal:100:0.3", 20, 500),
        ("histogram:16=0.5,64=0.5", 16, 64),
    ],
)
def test_length_distributions(text: str, low: int, high: int) -> None:
    spec = parse_length(text)
    rng = np.random.default_rng(0)
    draws = [spec.draw(rng) for _ in range(500)]
    assert low <= min(draws) and max(draws) <= high
    assert abs(np.mean(draws) - spec.mean) < 0.1 * spec.mean
    if spec.kind == "histogram":
        assert set(draws) == {16, 64}


@pytest.mark.parametrize(
    "bad", ["zipf:3", "uniform:9:3", "fixed", "normal:1", "histogram:x"]
)
def test_bad_length_spec(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_length(bad)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        # inf overflowed an integer cast when drawing (an internal error), NaN
        # failed at a sample's read, "-5" was an "unknown distribution".
        ("uniform:1:inf", "'uniform:1:inf' needs 2 finite non-negative"),
        ("normal:inf:1", "'normal:inf:1' needs 2 finite non-negative"),
        ("lognormal:100:nan", "'lognormal:100:nan' needs 2 finite non-negative"),
        ("-5", "'-5' needs 1 finite non-negative"),
        ("inf", "'inf' needs 1 finite non-negative"),
        ("histogram:16=nan", "finite weights"),
        ("histogram:0=1", "lengths >= 1"),
        ("histogram:x=1", "whole lengths"),
    ],
)
def test_non_finite_or_negative_lengths_are_named(bad: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        parse_length(bad)


def test_load_and_unload_by_index() -> None:
    qsl = build_qsl(get_benchmark("resnet50"), options=DatasetOptions(samples=10))
    assert qsl.performance_sample_count == 10
    qsl.load_samples(_idx(1, 2, 3))
    assert qsl.loaded_count == 3
    image = qsl.sample(2).image
    assert image.shape == (3, 224, 224) and image.dtype == np.float32
    assert qsl.sample(2) is qsl.sample(2)  # loaded: served from memory
    qsl.unload_samples(_idx(1, 2))
    assert qsl.loaded_count == 1
    assert 0 <= qsl.reference(5) < 1000
    with pytest.raises(DatasetError, match="outside dataset"):
        qsl.sample(10)


def test_openorca_pickle(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "input": ["Summarise: the cat sat.", "Why is the sky blue?"],
            "tok_input": [[1, 5, 6, 7], [1, 8, 9]],
            "output": ["A cat sat.", "Rayleigh scattering."],
            "tok_output": [[11, 12, 13], [14, 15]],
        }
    )
    path = tmp_path / "open_orca.pkl"
    frame.to_pickle(path)
    with pytest.raises(ConfigError, match="--allow-pickle"):
        build_qsl(LLAMA, path)  # unpickling runs code: never without being asked
    qsl = build_qsl(LLAMA, path, options=TRUSTED)
    assert qsl.total_sample_count == 2
    assert qsl.performance_sample_count == 2  # capped at the dataset size
    sample = qsl.sample(1)
    assert sample.prompt == "Why is the sky blue?"
    assert sample.input_ids.tolist() == [1, 8, 9]
    assert sample.output_tokens == 2
    assert sample.reference == "Rayleigh scattering."


def test_csv_column_mapping(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("q,gold,n\nhello there,hi,5\nbye now,ciao,3\n")
    opts = DatasetOptions(
        columns={"prompt": "q", "reference": "gold", "output_tokens": "n"}
    )
    qsl = build_qsl(LLAMA, path, options=opts)
    assert qsl.sample(1).prompt == "bye now"
    assert qsl.sample(1).reference == "ciao"
    assert qsl.sample(1).output_tokens == 3


def test_parquet(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pd.DataFrame({"prompt": ["a b", "c"], "answer": ["x", "y"]}).to_parquet(path)
    qsl = build_qsl(LLAMA, path)
    assert (qsl.sample(0).prompt, qsl.sample(1).reference) == ("a b", "y")


def test_missing_column_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("q,gold\nhello,hi\n")
    with pytest.raises(
        DatasetError, match=r"column 'question' \(for prompt\) does not exist"
    ):
        build_qsl(LLAMA, path, options=DatasetOptions(columns={"prompt": "question"}))
    # The flag the error names is the one run and sweep have (it said --column).
    with pytest.raises(DatasetError, match=r"no prompt column found.*--dataset-column"):
        build_qsl(LLAMA, path)


def test_jsonl_is_lazy_and_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "one"}\n\n{"prompt": "two"}\n{bad\n')
    qsl = build_qsl(LLAMA, path)
    assert qsl.total_sample_count == 3
    assert qsl.sample(1).prompt == "two"
    with pytest.raises(DatasetError, match="line 3 is not valid JSON"):
        qsl.load_samples(_idx(2))


def test_cnn_dailymail_json(tmp_path: Path) -> None:
    path = tmp_path / "cnn_eval.json"
    rows = [
        {
            "instruction": "Summarize the article.",
            "input": "Rain fell.",
            "output": "Rain.",
        }
    ]
    path.write_text(json.dumps(rows))
    qsl = build_qsl(get_benchmark("gptj"), path)
    sample = qsl.sample(0)
    assert "### Instruction:\nSummarize the article." in sample.prompt
    assert sample.prompt.endswith("### Response:")
    assert sample.reference == "Rain."


def test_squad_json(tmp_path: Path) -> None:
    doc = {
        "version": "1.1",
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "Paris is in France.",
                        "qas": [
                            {
                                "id": "q1",
                                "question": "Where is Paris?",
                                "answers": [
                                    {"text": "France", "answer_start": 12},
                                    {"text": "in France", "answer_start": 9},
                                ],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "dev-v1.1.json"
    path.write_text(json.dumps(doc))
    qsl = build_qsl(get_benchmark("bert"), path)
    assert qsl.reference(0) == ("France", "in France")
    assert qsl.sample(0).prompt.startswith("Where is Paris?")


def test_imagenet_val_map(tmp_path: Path) -> None:
    np.save(
        tmp_path / "ILSVRC2012_val_00000001.JPEG.npy", np.ones((3, 4, 4), np.float32)
    )
    (tmp_path / "val_map.txt").write_text(
        "ILSVRC2012_val_00000001.JPEG 65\nmissing.JPEG 3\n"
    )
    qsl = build_qsl(get_benchmark("resnet50"), tmp_path / "val_map.txt")
    assert qsl.reference(1) == 3
    assert qsl.sample(0).image.shape == (3, 4, 4)
    with pytest.raises(DatasetError, match="no preprocessed"):
        qsl.load_samples(_idx(1))


def test_sharegpt_and_multi_turn(tmp_path: Path) -> None:
    share = tmp_path / "sharegpt.json"
    share.write_text(
        json.dumps(
            [
                {
                    "id": "a",
                    "conversations": [
                        {"from": "human", "value": "hi"},
                        {"from": "gpt", "value": "hello you"},
                    ],
                },
                {"id": "b", "conversations": [{"from": "human", "value": "alone"}]},
            ]
        )
    )
    qsl = build_qsl(LLAMA, share)
    assert qsl.total_sample_count == 1
    assert (qsl.sample(0).prompt, qsl.sample(0).output_tokens) == ("hi", 2)
    chat = tmp_path / "chat.jsonl"
    msgs = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d e"},
    ]
    chat.write_text(json.dumps({"messages": msgs}) + "\n")
    qsl = build_qsl(LLAMA, chat)
    assert qsl.total_sample_count == 2
    second = qsl.sample(1)
    assert second.messages == (("user", "a"), ("assistant", "b"), ("user", "c"))
    assert second.reference == "d e"


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("d.json", "{not json", "is not valid JSON"),
        ("d.pkl", "garbage", "Cannot read pickle dataset"),
        ("cnn.json", '[{"instruction": "x"}]', "lacks instruction/input/output"),
        ("val_map.txt", "one two three\n", "expected '<image file> <label>'"),
    ],
)
def test_malformed_files(tmp_path: Path, name: str, content: str, match: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    fmt = "cnn-dailymail" if name == "cnn.json" else None
    with pytest.raises(DatasetError, match=match):
        build_qsl(LLAMA, path, fmt=fmt, options=TRUSTED)


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        build_qsl(LLAMA, tmp_path / "nope.pkl")
    path = tmp_path / "x.bin"
    path.write_text("x")
    with pytest.raises(ConfigError, match="Cannot read dataset format 'kits19'"):
        build_qsl(get_benchmark("3d-unet"), path)
    with pytest.raises(DatasetError, match="not valid JSON"):  # openimages: a JSON file
        build_qsl(get_benchmark("retinanet"), path)


def _word_level_tokenizer(path: Path, words: list[str]) -> Path:
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(path))
    return path


def test_tokenizer_matches_and_mismatches(tmp_path: Path) -> None:
    tok = _word_level_tokenizer(
        tmp_path / "tokenizer.json", ["hello", "world", "again"]
    )
    frame = pd.DataFrame({"input": ["hello world"], "tok_input": [[1, 2]]})
    frame.to_pickle(tmp_path / "ok.pkl")
    qsl = build_qsl(LLAMA, tmp_path / "ok.pkl", options=trusted(tokenizer=tok))
    assert qsl.tokenizer is not None and qsl.tokenizer.decode([1, 3]) == "hello again"
    pd.DataFrame({"input": ["hello world"], "tok_input": [[7, 900]]}).to_pickle(
        tmp_path / "bad.pkl"
    )
    with pytest.raises(DatasetError, match="tokenizer does not match"):
        build_qsl(LLAMA, tmp_path / "bad.pkl", options=trusted(tokenizer=tok))
    pd.DataFrame({"input": ["hello world"], "tok_input": [[2, 1]]}).to_pickle(
        tmp_path / "swap.pkl"
    )
    with pytest.raises(DatasetError, match="does not reproduce"):
        build_qsl(LLAMA, tmp_path / "swap.pkl", options=trusted(tokenizer=tok))


def test_synthetic_with_user_tokenizer(tmp_path: Path) -> None:
    words = sorted(set(corpus_tokenizer().decode(range(2, 400)).split()))
    tok = _word_level_tokenizer(tmp_path / "tokenizer.json", words)
    opts = DatasetOptions(samples=3, tokenizer=tok, input_len=parse_length("fixed:12"))
    qsl = build_qsl(LLAMA, options=opts)
    assert qsl.sample(0).input_tokens == 12
    assert max(qsl.sample(0).input_ids) < len(words) + 1


def test_bad_tokenizer_file(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(DatasetError, match="Cannot read tokenizer"):
        build_qsl(LLAMA, options=DatasetOptions(tokenizer=tmp_path))
    with pytest.raises(DatasetError, match="not found"):
        build_qsl(LLAMA, options=DatasetOptions(tokenizer=tmp_path / "x.json"))


def test_a_bare_number_is_a_fixed_length() -> None:
    # ``run --help`` lists "128" among the forms of --input-len.
    assert parse_length("32") == parse_length("fixed:32")
