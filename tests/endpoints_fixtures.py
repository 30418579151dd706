"""Stored MLPerf Endpoints points, as ``sweep`` and ``endpoints run`` write them (no run).

Two shared figures make every point's checks derivable: 300 output tokens over 2 s
(system_tps 150) and a TPOT p90 of 2 ms (tps_per_user 500).
"""

from __future__ import annotations

import json
from pathlib import Path

LEVELS = [1, 2, 4, 8, 16, 32, 40]


def store_point(
    folder: Path,
    c: int,
    i: int,
    mode: str = "concurrency",
    *,
    tokens: int = 300,
    tpot_p90_ms: int = 2,
) -> Path:
    """``folder/NN_cK/performance/result_summary.json`` of one point (2 s long)."""
    ns = [1_000_000 * k for k in (1, tpot_p90_ms, 3)]
    summary = {
        "n_samples_issued": 30,
        "n_samples_completed": 30,
        "n_samples_failed": 0,
        "duration_ns": 2_000_000_000,
        "ttft": {"total": sum(ns), "percentiles": {"50": ns[1], "90": ns[2]}},
        "tpot": {"total": sum(ns), "percentiles": {"50": ns[0], "90": ns[1]}},
        "output_sequence_lengths": {"total": tokens, "percentiles": {"50": 10}},
        "run_config": {"load": {"mode": mode, "concurrency": c, "warmup_requests": 4}},
        "infermeter": {},
    }
    path = folder / f"{i:02d}_c{c}" / "performance" / "result_summary.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(summary))
    return path


def store_curve(folder: Path, levels: list[int] = LEVELS) -> Path:
    for i, c in enumerate(levels):
        store_point(folder, c, i)
    return folder


def word_tokenizer(folder: Path) -> Path:
    """A tokenizer folder where each of the mock's words is one token."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "tok": 1, **{f"w{i}": i + 2 for i in range(1000)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # type: ignore[assignment]
    folder.mkdir(parents=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "[UNK]",
        "chat_template": "{% for m in messages %}{{ m['content'] }} {% endfor %}",
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder
