"""Results, diff, compare and report on real runs of the engine (fake SUT, CLI)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.report.html import build_report
from infermeter.results.runfolder import load_run

pytest.importorskip("infermeter.runs.run")
pytestmark = pytest.mark.slow
runner = CliRunner()
COMMON = [
    "--sut",
    "fake",
    "--benchmark",
    "llama2-70b",
    "--scenario",
    "Server",
    "--target-qps",
    "300",
    "--min-duration",
    "1s",
    "--min-query-count",
    "600",
    "--total-sample-count",
    "600",
    "--sut-opt",
    "jitter=0.2",
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    store = root / "store.sqlite"
    variants = {
        "a": ["--sut-opt", "seed=1"],
        "b": ["--sut-opt", "seed=2"],
        # The same SUT, 10 % slower: TTFT 50 -> 55 ms, TPOT 10 -> 11 ms.
        "slow": [
            "--sut-opt",
            "seed=2",
            "--sut-opt",
            "ttft_ms=55",
            "--sut-opt",
            "tpot_ms=11",
        ],
    }
    for name, extra in variants.items():
        args = [
            "run",
            *COMMON,
            *extra,
            "--output-dir",
            str(root / name),
            "--store",
            str(store),
        ]
        result = runner.invoke(app, args)
        assert result.exit_code in (0, 3), result.output + repr(result.exception)
    return root, store


def test_runs_are_indexed_by_the_run_command(runs):
    root, store = runs
    result = runner.invoke(app, ["results", "list", "--store", str(store), "--json"])
    listed = json.loads(result.output)
    assert {r["path"] for r in listed} >= {str((root / n).resolve()) for n in "ab"}


def test_diff_same_fake_sut_is_no_significant_difference(runs):
    root, _ = runs
    result = runner.invoke(app, ["diff", str(root / "a"), str(root / "b")])
    assert result.exit_code == 0, result.output
    assert "verdict: no significant difference" in result.output


def test_diff_ten_percent_slower_is_worse_with_interval(runs):
    root, _ = runs
    result = runner.invoke(app, ["diff", str(root / "a"), str(root / "slow"), "--json"])
    assert result.exit_code == 4
    data = json.loads(result.output)
    assert data["verdict"] == "worse"
    p50 = next(m for m in data["metrics"] if m["name"] == "latency p50")
    assert p50["verdict"] == "worse" and 0.02 < p50["low"] < 0.10 < p50["high"]


def test_compare_and_report_of_a_real_run(runs, tmp_path):
    root, store = runs
    result = runner.invoke(
        app,
        [
            "compare",
            str(root / "a"),
            "--gpu",
            "h100-sxm",
            "--gpus",
            "1",
            "--store",
            str(store),
            "--json",
        ],
    )
    data = json.loads(result.output)
    assert data["run"]["unit"] == "tokens/s" and data["rows"]
    assert data["cost"]["per_million_tokens"] > 0
    html = build_report([load_run(root / "a")])
    assert "Latency CDF" in html and "FakeSUT" in html
