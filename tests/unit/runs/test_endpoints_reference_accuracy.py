"""The reference engine's accuracy passes without the client: its YAML, and the
refusal, before any load, of a scorer the client cannot run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infermeter.errors import ConfigError
from infermeter.runs.endpoints_accuracy import AccuracySet
from infermeter.runs.endpoints_reference import run_reference_points
from infermeter.runs.endpoints_reference_accuracy import (
    accuracy_entry,
    check_client_scorer,
    point_config,
    write_point_config,
)
from infermeter.runs.endpoints_rules import SEED_SETS
from infermeter.runs.endpoints_run import EndpointsRunRequest


def _fake_client(folder: Path) -> Path:
    """A venv whose Python fails as one without the rouge scorer's packages does;
    every call is logged, so a test sees what ran."""
    folder.mkdir()
    python = folder / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {folder}/calls\n'
        "echo \"ModuleNotFoundError: No module named 'evaluate'\" >&2\nexit 1\n"
    )
    python.chmod(0o755)
    (folder / "inference-endpoint").write_text("#!/bin/sh\nexit 1\n")
    return python


def _one_level_with_accuracy(tmp_path: Path) -> EndpointsRunRequest:
    """One level (4) with an accuracy pass there, on a one-row accuracy set."""
    acc = tmp_path / "acc.jsonl"
    acc.write_text(json.dumps({"prompt": "p", "reference": "r"}) + "\n")
    return EndpointsRunRequest(
        sut_options={"url": "http://127.0.0.1:9/v1", "model": "m"},
        concurrency=[4],
        out_dir=tmp_path / "out",
        partial=True,
        accuracy_file=acc,
        accuracy_at=[4],
    )


def test_rouge_is_refused_with_the_clients_reason_before_any_load(
    tmp_path: Path,
) -> None:
    python = _fake_client(tmp_path / "venv")
    request = _one_level_with_accuracy(tmp_path)
    with pytest.raises(ConfigError) as refused:
        run_reference_points(request, python)
    message = str(refused.value)
    assert "No module named 'evaluate'" in message
    assert "Hugging Face Hub" in message and "--accuracy-metric exact_match" in message
    assert not (tmp_path / "out").exists()  # nothing written, nothing run
    # exact_match needs no probe: the client's string_match scorer has no downloads
    calls = (tmp_path / "venv" / "calls").read_text().splitlines()
    check_client_scorer(python, "exact_match", timeout_s=5)
    assert (tmp_path / "venv" / "calls").read_text().splitlines() == calls


def test_the_point_yaml_is_the_command_lines_run_with_an_accuracy_dataset(
    tmp_path: Path,
) -> None:
    yaml = pytest.importorskip("yaml")
    data = AccuracySet("cnn_eval", ["p0"], ["r0"], max_tokens=8)
    request = EndpointsRunRequest(
        sut_options={"url": "http://127.0.0.1:8000/v1", "model": "m"},
        concurrency=[1, 4],
        out_dir=tmp_path,
        dataset_size=16,
        min_passes=2,
        seed_set="A",
    )
    perf = {"name": "perf", "type": "performance", "path": "perf.jsonl"}
    entry = accuracy_entry(data, tmp_path / "acc.jsonl", "rouge")
    config = point_config(request, 4, [perf, entry], tmp_path / "04", "tok/")
    read = yaml.safe_load(write_point_config(config, tmp_path / "c4.yaml").read_text())
    assert read == config
    runtime = read["settings"]["runtime"]
    assert runtime["n_samples_to_issue"] == 32  # 2 passes of 16, as --num-samples
    assert runtime["dataloader_random_seed"] == SEED_SETS["A"]["sample_index_rng_seed"]
    assert read["settings"]["load_pattern"] == {
        "type": "concurrency",
        "target_concurrency": 4,
    }
    assert read["endpoint_config"]["endpoints"] == ["http://127.0.0.1:8000"]
    assert read["datasets"][1]["accuracy_config"] == {
        "eval_method": "rouge",
        "ground_truth": "ground_truth",
    }


def test_the_reference_engine_needs_no_rouge_library_in_infermeters_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client scores ROUGE in its own venv: infermeter's lacking rouge-score
    refuses its own engine's run, and lets the reference run reach the probe."""
    import importlib.util

    from infermeter.errors import MissingDependencyError

    find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "rouge_score" else find(name, *a),
    )
    python = _fake_client(tmp_path / "venv")
    request = _one_level_with_accuracy(tmp_path)
    with pytest.raises(MissingDependencyError):
        request.validate()
    with pytest.raises(ConfigError) as refused:
        run_reference_points(request, python)
    assert "No module named 'evaluate'" in str(refused.value)  # the client's probe
    assert (tmp_path / "venv" / "calls").read_text().strip()  # it ran
