"""The reference client's YAML configs, run on infermeter's engine (endpoints run --config)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli_main import run_main

from infermeter.errors import ConfigError
from infermeter.runs.endpoints_config import read_config
from infermeter.runs.endpoints_rules import SEED_SETS
from infermeter.servers.mock import MockConfig, MockServer

pytestmark = pytest.mark.integration
LEVELS = [1, 2, 4, 8, 16, 32, 40]
A = SEED_SETS["A"]


def _config(folder: Path, url: str, c: int, **over: object) -> Path:
    """A config as the reference client reads it (its v0.7 seed names, seed set A)."""
    lines = [
        'name: "mock-curve"',
        'type: "online"',
        "model_params:",
        f'  name: "{over.get("model", "m")}"',
        "  max_new_tokens: 8",
        "datasets:",
        '  - name: "perf"',
        '    type: "performance"',
        '    path: "prompts.jsonl"',
        '  - name: "cnn_dailymail::llama3_8b"',
        '    type: "accuracy"',
        '    path: "eval.jsonl"',
        "    accuracy_config:",
        '      eval_method: "rouge"',
        '      ground_truth: "highlights"',
        "settings:",
        "  runtime:",
        "    min_duration_ms: 200",
        f"    scheduler_random_seed: {A['scheduler_rng_seed']}",
        f"    dataloader_random_seed: {A['sample_index_rng_seed']}",
        "  load_pattern:",
        f'    type: "{over.get("pattern", "concurrency")}"',
        f"    target_concurrency: {c}",
        "endpoint_config:",
        f'  endpoints: ["{url.removesuffix("/v1")}"]',
    ]
    path = folder / f"c{c}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_reference_configs_run_as_a_bound_curve(tmp_path: Path) -> None:
    rows = [{"prompt": f"question {i} about the weather"} for i in range(6)]
    (tmp_path / "prompts.jsonl").write_text(
        "\n".join(json.dumps(r) for r in rows) + "\n"
    )
    # the accuracy dataset: its ROUGE passes run at §5.3's N points
    evals = [{"prompt": f"story {i}", "highlights": f"gist {i}"} for i in range(5)]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))
    timed = MockConfig(mode="timed", ttft="const:0.004", itl="const:0.001")
    with MockServer(timed) as url:
        configs = [_config(tmp_path, url, c) for c in LEVELS]
        args = [a for p in configs for a in ("--config", str(p))]
        done = run_main("endpoints", "run", *args, "--out", str(tmp_path / "curve"))
    assert done.code == 0, done.output
    summaries = sorted((tmp_path / "curve").glob("*/performance/result_summary.json"))
    assert len(summaries) == len(LEVELS)
    for path in summaries:
        doc = json.loads(path.read_text())
        run = doc["infermeter"]["endpoints"]
        assert run["seed_set"] == "A" and run["dataset_size"] == len(rows)
        assert doc["n_samples_issued"] == run["passes"] * len(rows)
        assert (
            doc["output_sequence_lengths"]["percentiles"]["50"] == 8
        )  # max_new_tokens
        assert any("shortens" in p for p in run["problems"])  # 200 ms windows
    accuracy = sorted((tmp_path / "curve").glob("*/accuracy/accuracy_results.json"))
    assert [p.parent.parent.name for p in accuracy] == [
        "00_c1",
        "01_c2",
        "03_c8",
        "06_c40",
    ]
    entry = json.loads(accuracy[0].read_text())["cnn_dailymail::llama3_8b"]
    assert entry["num_samples"] == len(evals) and entry["complete"]
    assert set(entry["score"]) == {
        "rouge1",
        "rouge2",
        "rougeL",
        "rougeLsum",
        "gen_len",
        "gen_num",
    }
    assert entry["score"]["gen_num"] == len(evals)


def test_configs_that_are_not_one_fixed_concurrency_curve_are_refused(
    tmp_path: Path,
) -> None:
    url = "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match=r"load_pattern\.type is 'poisson'"):
        read_config(_config(tmp_path, url, 1, pattern="poisson"))
    a = _config(tmp_path, url, 1)
    b = _config(tmp_path, url, 2, model="other")
    done = run_main(
        "endpoints", "run", "--config", str(a), "--config", str(b), "--out", "x"
    )
    assert done.code == 2 and "model 'other' differs" in done.stderr
    mixed = run_main(
        "endpoints", "run", "--config", str(a), "--model", "m", "--out", "x"
    )
    assert mixed.code == 2 and "not both" in mixed.stderr
    assert read_config(a).url == url and read_config(a).seed_set == "A"


def test_a_run_where_nothing_answers_exits_1(tmp_path: Path) -> None:
    done = run_main(
        "endpoints", "run", "--url", "http://127.0.0.1:9/v1", "--model", "m",
        "--concurrency", "1,2,4,8,16,32,40", "--duration", "0.05", "--dataset-size", "2",
        "--warmup", "0", "--out", str(tmp_path / "curve"),
    )  # fmt: skip
    assert done.code == 1, done.output
    assert "failed" in done.stdout
