"""``infermeter run --audit`` and ``infermeter compliance``: verdicts, exit codes, files, errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from infermeter.cli.main import app
from tests.cli_main import run_main

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def audit_test06(tmp_path: Path, *extra: str) -> tuple[int, str]:
    return invoke(
        "run",
        "--audit",
        "TEST06",
        "--sut",
        "audit-fake",
        "--benchmark",
        "llama2-70b",
        "--scenario",
        "Offline",
        "--target-qps",
        "100",
        "--output-dir",
        str(tmp_path / "out"),
        "--store",
        str(tmp_path / "store.db"),
        *extra,
    )


def test_run_audit_passes_an_honest_sut_and_writes_the_layout(tmp_path: Path) -> None:
    code, text = audit_test06(tmp_path)
    assert code == 0, text
    assert "TEST06: PASS" in text
    out = tmp_path / "out"
    assert (out / "TEST06" / "verify_accuracy.txt").read_text().splitlines() == [
        "First token check pass: Skipped",
        "EOS check pass: True",
        "Sample length check pass: True",
        "TEST06 verification complete",
    ]
    assert (out / "TEST06" / "accuracy" / "mlperf_log_accuracy.json").is_file()
    assert (
        "*.*.min_query_count = 100"
        in (out / "runs" / "TEST06-audit.config").read_text()
    )


def test_run_audit_fails_a_cheat_with_exit_3(tmp_path: Path) -> None:
    code, text = audit_test06(tmp_path, "--sut-opt", "cheat=eos")
    assert code == 3, text
    assert "TEST06: FAIL" in text
    assert "EOS check pass: False" in text


def test_compliance_verifies_logs_on_disk(tmp_path: Path) -> None:
    assert audit_test06(tmp_path)[0] == 0
    audit_run = tmp_path / "out" / "runs" / "TEST06"
    code, text = invoke(
        "compliance",
        "TEST06",
        "-c",
        str(audit_run),
        "-o",
        str(tmp_path / "v"),
        "--json",
    )
    assert code == 0, text
    doc = json.loads(text)
    assert doc["passed"] is True and doc["test"] == "TEST06"
    # The benchmark's int32 tokens are read as int64 and fail the length check.
    code, _ = invoke(
        "compliance",
        "TEST06",
        "-c",
        str(audit_run),
        "-o",
        str(tmp_path / "w"),
        "--dtype",
        "int64",
    )
    assert code == 3


def test_run_with_an_audit_config_applies_it(tmp_path: Path) -> None:
    config = tmp_path / "audit.config"
    config.write_text("*.*.mode = 2\n*.*.min_query_count = 50\n*.*.min_duration = 0\n")
    code, text = invoke(
        "run",
        "--sut",
        "null",
        "--benchmark",
        "resnet50",
        "--scenario",
        "Offline",
        "--audit-config",
        str(config),
        "--output-dir",
        str(tmp_path / "run"),
        "--store",
        str(tmp_path / "store.db"),
        "--json",
    )
    assert code == 0, text
    detail = (tmp_path / "run" / "mlperf_log_detail.txt").read_text()
    assert '"key": "requested_min_query_count", "value": 50' in detail
    assert "Found Audit Config file" in detail


def test_unknown_test_and_missing_logs_are_one_line_usage_errors(
    tmp_path: Path,
) -> None:
    for args, message in (
        (["TEST05", "-c", str(tmp_path), "-o", str(tmp_path)], "Unknown audit test"),
        (["TEST01", "-c", str(tmp_path), "-o", str(tmp_path)], "--results-dir"),
        (
            ["TEST04", "-c", str(tmp_path), "-o", str(tmp_path), "-r", str(tmp_path)],
            "not found",
        ),
    ):
        # In-process through main(): the console script's exit code and error line.
        result = run_main("compliance", *args)
        assert result.code == 2, result.stderr
        assert message in result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_test06_refuses_a_sut_that_answers_text_with_one_line(tmp_path: Path) -> None:
    # The openai SUT logs answer text; TEST06 would read it as int32 token ids.
    # Refused before any preflight or folder: the URL is never contacted.
    done = run_main(
        "run", "--audit", "TEST06", "--sut", "openai", "--url",
        "http://127.0.0.1:9/v1", "--model", "m", "--benchmark", "llama2-70b",
        "--scenario", "Offline", "--output-dir", str(tmp_path / "out"),
        "--store", str(tmp_path / "store.db"),
    )  # fmt: skip
    assert done.code == 2, done.output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "TEST06 checks token ids" in lines[0], done.stderr
    assert "Traceback" not in done.output
    assert not (tmp_path / "out").exists()
