"""``infermeter run`` end to end: verdicts, exit codes, run folders and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_main import run_main


def run(*args: str) -> tuple[int, str]:
    result = run_main("run", *args)
    return result.code, result.output


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "store.sqlite")


def test_valid_server_run_writes_the_run_folder(tmp_path: Path, store: str) -> None:
    out = tmp_path / "run"
    code, text = run(
        "--sut",
        "fake",
        "--benchmark",
        "llama2-70b",
        "--scenario",
        "Server",
        "--target-qps",
        "200",
        "--min-duration",
        "1s",
        "--total-sample-count",
        "512",
        "--sut-opt",
        "ttft_ms=5",
        "--sut-opt",
        "tpot_ms=1",
        "--output-dir",
        str(out),
        "--store",
        store,
    )
    assert code == 0, text
    assert "Result: VALID" in text
    files = {p.name for p in out.iterdir()}
    assert {
        "run.json",
        "records.npz",
        "mlperf_log_summary.txt",
        "mlperf_log_detail.txt",
        "mlperf_log_accuracy.json",
    } <= files
    doc = json.loads((out / "run.json").read_text())
    assert doc["verdict"]["result"] == "VALID"
    assert doc["benchmark"] == "llama2-70b"
    assert doc["metrics"]["tokens_per_second"] > 0
    assert doc["label"] == "infermeter result (unverified)"


def test_invalid_run_exits_3_with_its_reasons(tmp_path: Path, store: str) -> None:
    code, text = run(
        "--sut",
        "fake",
        "--benchmark",
        "resnet50",
        "--scenario",
        "Server",
        "--target-qps",
        "100",
        "--min-duration",
        "500ms",
        "--sut-opt",
        "latency_ms=40",
        "--output-dir",
        str(tmp_path / "r"),
        "--store",
        store,
    )
    assert code == 3, text
    assert "Result: INVALID" in text
    assert (
        "Reduce target QPS to improve latency." in text
    )  # resnet50 Server bound: 15 ms


def test_a_sut_that_never_completes_is_invalid_not_a_hang(
    tmp_path: Path, store: str
) -> None:
    code, text = run(
        "--sut",
        "fake",
        "--benchmark",
        "resnet50",
        "--scenario",
        "Offline",
        "--target-qps",
        "100",
        "--min-duration",
        "100ms",
        "--sut-opt",
        "hang_after=5",
        "--completion-timeout",
        "300ms",
        "--output-dir",
        str(tmp_path / "r"),
        "--store",
        store,
    )
    assert code == 3, text
    assert "The SUT stopped answering" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target-qps", "0"], "--target-qps must be > 0 (got 0)"),
        (["--target-qps", "-5"], "--target-qps must be > 0 (got -5)"),
        (["--min-duration", "10"], "--min-duration '10' is not a duration"),
        (["--scenario", "Streaming"], "Unknown scenario 'Streaming'"),
        (
            ["--mode", "FindPeakPerformance", "--scenario", "Offline"],
            "FindPeakPerformance needs the Server scenario",
        ),
        (
            ["--min-duration", "10s", "--max-duration", "1s"],
            "max_duration_ms (1000) is below",
        ),
        (["--sut", "teleport"], "Unknown SUT kind 'teleport'"),
        (["--benchmark", "llama9"], "llama9"),
        # 0 would scrape /metrics in a busy loop; it was accepted.
        (["--metrics-interval", "0s"], "--metrics-interval must be > 0 (got '0s')"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path
) -> None:
    # In-process through main(): the console script's exit code and error line.
    result = run_main("run", "--output-dir", str(tmp_path / "r"), *args)
    assert result.code == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ("*.Server.target_qps=10\n", "spaces around"),
        ("*.Server.targt_qps = 10\n", "target_qps"),
        ("*.Server.target_qps = 10 # ten\n", "comment"),
    ],
)
def test_bad_user_conf_names_file_line_and_key(
    conf: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "user.conf"
    path.write_text("# my settings\n" + conf)
    result = run_main(
        "run", "--user-conf", str(path), "--output-dir", str(tmp_path / "r")
    )
    assert result.code == 2, result.stderr
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"{path}:2" in line
    assert message in line
    assert "Traceback" not in line


def test_help_ends_with_examples() -> None:
    result = run_main("run", "--help")
    assert result.code == 0
    assert "Examples:" in result.output


def test_a_negative_dataset_seed_is_a_usage_error(tmp_path: Path) -> None:
    # It used to be blamed on the data: "Cannot read sample 216 of
    # 'synthetic-prompts': expected non-negative integer".
    result = run_main(
        "run", "--output-dir", str(tmp_path / "r"), "--dataset-seed", "-1"
    )
    assert result.code == 2, result.output
    assert "Invalid value for '--dataset-seed'" in result.output
    assert "Cannot read sample" not in result.output
