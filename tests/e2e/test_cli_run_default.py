"""``infermeter run`` with no SUT: a simulated 8x H100 endpoint over real HTTP, compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_main import flat, run_main

pytestmark = pytest.mark.integration
LABEL = "simulated 8x H100 SXM (infermeter performance model) — not a measurement"


def test_default_run_shortened_is_valid_and_compared(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_main(
        "run",
        "--min-duration",
        "5s",
        "--output-len",
        "uniform:4:40",
        "--output-dir",
        str(out),
        "--store",
        str(tmp_path / "store.db"),
    )
    assert result.code == 0, result.output
    text = flat(result.output)
    assert (
        "Result: VALID — llama2-70b Server PerformanceOnly on simulated 8x H100" in text
    )
    assert "v4.1-0043" in text and "NVIDIA DGX H100" in text
    assert f"This run: {LABEL}." in text and "Short run (5 s of arrivals)" in text
    doc = json.loads((out / "run.json").read_text())
    assert doc["sut"]["kind"] == "sim"
    assert doc["sut"]["params"] == {"accelerator": "h100-sxm", "count": "8"}
    assert doc["metrics"]["target_qps"] == pytest.approx(21605.8 / 294.45)
    assert doc["metrics"]["samples_failed"] == 0
    # The endpoint's own counts, read from its process before it stopped.
    endpoint = doc["sut"]["stats"]["endpoint"]
    assert endpoint["completed"] == doc["metrics"]["queries_issued"] == 512
    assert endpoint["tp"] == 2 and endpoint["replicas"] == 4
    assert doc["dataset"]["total_sample_count"] == 256


def test_default_run_of_a_non_llm_benchmark_says_pass_sut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a run folder, if one were written, lands here
    done = run_main("run", "--benchmark", "resnet50")
    assert done.code == 2, done.output
    assert "simulates LLM benchmarks only" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# ``make run`` itself (``infermeter run``, unshortened) is checked in
# test_examples.py, on the run of that --help example: the same 20 s run once.
