"""``infermeter accuracy`` scores a run folder and prints PASS/FAIL, or one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.workloads import get_benchmark
from infermeter.workloads.datasets import DatasetOptions, build_qsl

runner = CliRunner()


def _run_folder(tmp_path: Path, *, correct: bool) -> Path:
    """A run folder as infermeter writes it: run.json + mlperf_log_accuracy.json."""
    qsl = build_qsl(get_benchmark("resnet50"), options=DatasetOptions(samples=10))
    rows = []
    for i in range(10):
        label = int(qsl.reference(i))
        top1 = label if correct else (label + 1) % 1000
        data = np.asarray([top1, 0, 0, 0, 0], np.float32).tobytes().hex().upper()
        rows.append({"seq_id": i, "qsl_idx": i, "data": data})
    (tmp_path / "mlperf_log_accuracy.json").write_text(json.dumps(rows))
    run = {
        "benchmark": "resnet50",
        "dataset": {"name": "synthetic-images", "total_sample_count": 10},
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    return tmp_path


def test_pass_prints_table_and_exits_0(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["accuracy", str(_run_folder(tmp_path, correct=True))], terminal_width=150
    )
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "75.6954" in result.output


def test_fail_json_exits_3(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path, correct=False)
    result = runner.invoke(app, ["accuracy", str(folder), "--json"])
    assert result.exit_code == 3
    data = json.loads(result.output)
    assert data["passed"] is False
    assert data["metrics"][0]["metric"] == "top1" and data["metrics"][0]["value"] == 0.0


def test_log_from_another_dataset_is_one_line(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path, correct=True)
    result = runner.invoke(app, ["accuracy", str(folder), "--samples", "5"])
    assert result.exit_code != 0
    assert "the log is from another dataset" in str(result.exception)


def test_missing_log_and_benchmark(tmp_path: Path) -> None:
    result = runner.invoke(app, ["accuracy", str(tmp_path)])
    assert "names the benchmark" in str(result.exception)
    result = runner.invoke(app, ["accuracy", str(tmp_path), "--benchmark", "resnet50"])
    assert "not found" in str(result.exception)


def test_samples_below_one_is_a_one_line_error(tmp_path: Path) -> None:
    # -1 used to end in "internal error: ValueError", 0 read as "not given".
    folder = _run_folder(tmp_path, correct=True)
    for bad in ("0", "-1"):
        result = runner.invoke(app, ["accuracy", str(folder), "--samples", bad])
        assert f"--samples must be >= 1 (got {bad})" in str(result.exception)


def test_bad_response_format(tmp_path: Path) -> None:
    result = runner.invoke(app, ["accuracy", str(tmp_path), "--response-format", "x"])
    assert "Unknown --response-format 'x'" in str(result.exception)


def test_subprocess_error_is_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infermeter",
            "accuracy",
            str(tmp_path),
            "--benchmark",
            "resnet50",
            "--dataset",
            str(tmp_path / "missing.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2  # a bad path is a usage error
    assert proc.stderr.strip().count("\n") == 0
    assert "not found" in proc.stderr and "Traceback" not in proc.stderr
