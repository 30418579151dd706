"""``infermeter run --sut openai`` against the mock: verdicts, MLPerf logs, faults, secrets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from infermeter.servers.faults import FaultConfig
from infermeter.servers.mock import MockConfig, MockProcess, MockServer
from tests.cli_main import run_main

pytestmark = pytest.mark.integration

SECRET = "sk-infermeter-test-0f9e8d7c6b5a"


@pytest.fixture(scope="module")
def timed_url() -> Iterator[str]:
    # Eight tokens per answer keep the mock cheap at the 200 queries/s that
    # TTFT/TPOT early stopping needs (about 460 queries for p99).
    cfg = MockConfig(
        mode="timed", ttft="const:0.03", itl="const:0.003", output_tokens="const:8"
    )
    with MockProcess(cfg) as url:
        yield url


def _run(
    url: str, tmp: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, str, Path]:
    out = tmp / "run"
    args = [
        "run",
        "--sut",
        "openai",
        "--url",
        url,
        "--model",
        "m",
        "--benchmark",
        "llama2-70b",
        "--min-duration",
        "1s",
        "--performance-sample-count",
        "16",
        "--total-sample-count",
        "16",
        "--output-dir",
        str(out),
        "--store",
        str(tmp / "store.db"),
        *extra,
    ]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        result = run_main(*args)
    return result.code, result.output, out


def _summary(folder: Path) -> str:
    return (folder / "mlperf_log_summary.txt").read_text()


def test_server_run_is_valid_with_token_early_stopping(
    timed_url: str, tmp_path: Path
) -> None:
    # Bounds of 60 s: the verdict rests on early stopping's counts, not on how
    # fast a busy machine gets a 30 ms answer through (2 s is the rule).
    conf = tmp_path / "user.conf"
    conf.write_text(
        "llama2-70b.Server.ttft_latency = 60000\nllama2-70b.Server.tpot_latency = 60000\n"
    )
    code, output, folder = _run(
        timed_url,
        tmp_path,
        "--scenario",
        "Server",
        "--target-qps",
        "200",
        "--min-query-count",
        "500",
        "--user-conf",
        str(conf),
    )
    assert code == 0, output
    summary = _summary(folder)
    assert "Result is : VALID" in summary
    assert "TTFT Early Stopping Result:" in summary
    assert "TPOT Early Stopping Result:" in summary
    run = json.loads((folder / "run.json").read_text())
    assert run["metrics"]["samples_failed"] == 0
    # The mock waits 30 ms, then 3 ms per token (8 tokens), its timers exact to
    # 1 ms: no first token sooner, each timed at the first chunk (before the
    # answer ends), no answer shorter. (TPOT itself has no such bound: a late
    # first chunk shortens the span it divides.)
    metrics, timer_ns = run["metrics"], 1e6
    assert 30e6 - timer_ns <= metrics["ttft_ns"]["p50"] < metrics["latency_ns"]["p50"]
    assert metrics["latency_ns"]["min"] >= 30e6 + 7 * 3e6 - timer_ns
    assert metrics["tpot_ns"]["p50"] > 0
    assert (folder / "mlperf_log_detail.txt").exists()


def test_offline_run_is_valid(timed_url: str, tmp_path: Path) -> None:
    code, output, folder = _run(
        timed_url,
        tmp_path,
        "--scenario",
        "Offline",
        "--target-qps",
        "100",
        "--min-query-count",
        "100",
        # Four at a time (about 80 answers/s): the 110 samples outlast --min-duration.
        "--sut-opt",
        "max_in_flight=4",
    )
    assert code == 0, output
    assert "Result is : VALID" in _summary(folder)
    assert "Tokens per second" in _summary(folder)


def test_faulty_server_makes_mlperf_run_invalid_with_reasons(tmp_path: Path) -> None:
    faults = FaultConfig(error_rate=0.1, reset_rate=0.1, malformed_rate=0.1)
    cfg = MockConfig(mode="faults", ttft="const:0.01", itl="const:0.001", faults=faults)
    # In this process (a thread): 40 queries/s need no core of their own, and a
    # child interpreter costs about a CPU-second to start.
    with MockServer(cfg) as url:
        code, output, folder = _run(
            url,
            tmp_path,
            "--scenario",
            "Server",
            "--target-qps",
            "40",
            "--min-query-count",
            "48",
        )
    assert code == 3, output
    summary = _summary(folder)
    assert "Result is : INVALID" in summary
    for reason in ("HTTP 500", "connection reset", "malformed stream chunk"):
        assert reason in summary
    records = np.load(folder / "records.npz")
    status = records["status"]
    issued = int((records["issued_ns"] >= 0).sum())
    failed = int((status != 0).sum())
    ok = int(((status == 0) & (records["completed_ns"] >= 0)).sum())
    assert failed > 0 and ok + failed == issued
    run = json.loads((folder / "run.json").read_text())
    assert run["metrics"]["samples_failed"] == failed


def test_api_key_never_reaches_run_folder_or_output(
    timed_url: str, tmp_path: Path
) -> None:
    code, output, folder = _run(
        timed_url,
        tmp_path,
        "--scenario",
        "Server",
        "--target-qps",
        "20",
        "--min-query-count",
        "16",
        "--api-key-env",
        "IM_TEST_KEY",
        env={"IM_TEST_KEY": SECRET},
    )
    assert code in (0, 3), output  # too short to be VALID; only the files matter
    assert SECRET not in output
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "run.json" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    run = json.loads((folder / "run.json").read_text())
    assert run["sut"]["params"]["api_key_env"] == "IM_TEST_KEY"
