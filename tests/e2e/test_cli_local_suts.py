"""``infermeter run`` with the local real-compute SUTs gives VALID results in short settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_main import run_main


def _run(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "run"
    result = run_main(
        "run", *args, "--output-dir", str(out), "--store", str(tmp_path / "s.db")
    )
    assert result.code == 0, result.output
    return json.loads((out / "run.json").read_text())


@pytest.mark.parametrize("scenario", ["Offline", "SingleStream"])
def test_onnxruntime_resnet50_is_valid(tmp_path: Path, scenario: str) -> None:
    pytest.importorskip("onnxruntime")
    count = 16 if scenario == "Offline" else 64
    run = _run(
        tmp_path,
        "--sut",
        "onnxruntime",
        "--benchmark",
        "resnet50",
        "--scenario",
        scenario,
        "--min-duration",
        # Offline: the one query must outlast min duration even on an idle machine
        "100ms" if scenario == "Offline" else "500ms",
        # SingleStream: the 64 queries early stopping needs; Offline: 16 images
        # (of ResNet-50, well over 100 ms of compute on one thread).
        "--min-query-count",
        str(count),
        "--total-sample-count",
        "16",
        "--target-qps",
        "20",
        # One thread: an idle pool thread spins for its next task, which on a
        # busy 2-core machine doubled the CPU the run took.
        "--sut-opt",
        "threads=1",
    )
    assert run["verdict"]["result"] == "VALID"
    assert run["sut"]["kind"] == "onnxruntime"
    assert run["metrics"]["samples_completed"] >= count


def _p90_conf(tmp_path: Path) -> Path:
    # Short-test limits: p90 for e2e latency, and TTFT/TPOT limits (ms) no machine
    # misses, so that 64 queries with none over them pass early stopping. The test
    # checks the token run's wiring, not this machine's speed: with 20 s a CI run
    # beside two busy loops (2.6 samples/s against 20 QPS) queued past it.
    conf = tmp_path / "user.conf"
    conf.write_text(
        "*.Server.target_latency_percentile = 90\n"
        "*.Server.ttft_latency = 600000\n"
        "*.Server.tpot_latency = 60000\n"
    )
    return conf


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_torch_llm_token_run_is_valid(tmp_path: Path, scenario: str) -> None:
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    # One thread for a model of 128-wide layers: more only spin between its
    # small operations (a run took several times the CPU on a busy 2-core VM).
    torch.set_num_threads(1)
    try:
        _torch_run(tmp_path, scenario)
    finally:
        torch.set_num_threads(threads)


def _torch_run(tmp_path: Path, scenario: str) -> None:
    run = _run(
        tmp_path,
        "--sut",
        "torch_llm",
        "--benchmark",
        "llama2-70b",
        "--scenario",
        scenario,
        "--min-duration",
        # Offline: 64 samples must outlast the minimum duration even on a fast run
        "200ms" if scenario == "Offline" else "1s",
        "--min-query-count",
        "64",
        "--total-sample-count",
        "64",
        "--target-qps",
        "20",
        "--user-conf",
        str(_p90_conf(tmp_path)),
        "--sut-opt",
        "max_tokens=8",
    )
    assert run["verdict"]["result"] == "VALID", run["verdict"]
    metrics = run["metrics"]
    assert metrics["tokens_per_second"] > 0
    if scenario == "Server":
        assert metrics["ttft_ns"]["p99"] > 0
        assert metrics["tpot_ns"]["p99"] > 0


@pytest.mark.parametrize("sut", ["fake", "null"])
def test_every_sut_says_its_planned_run(tmp_path: Path, sut: str) -> None:
    done = run_main(
        "run", "--sut", sut, "--scenario", "Offline", "--min-duration", "0s",
        "--min-query-count", "8", "--total-sample-count", "8",
        "--performance-sample-count", "8", "--output-dir", str(tmp_path / "r"),
        "--store", str(tmp_path / "s.db"),
    )  # fmt: skip
    assert done.code == 0, done.output
    assert "planned run: " in done.stderr
