"""Results, diff, compare and report on real runs of the engine (fake SUT, CLI)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.loadgen.settings import Scenario
from infermeter.report.html import build_report
from infermeter.results.runfolder import load_run
from infermeter.runs.request import RunRequest
from infermeter.runs.run import execute
from infermeter.testing import ManualClock

pytest.importorskip("infermeter.runs.run")
pytestmark = pytest.mark.slow
runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs of the engine on virtual time, so that their latencies are
    the fake SUT's own (seeded jitter), not this machine's load of the moment."""
    root = tmp_path_factory.mktemp("real")
    store = root / "store.sqlite"
    variants = {
        "a": {"seed": "1"},
        "b": {"seed": "2"},
        # The same SUT, 10 % slower: TTFT 50 -> 55 ms, TPOT 10 -> 11 ms.
        "slow": {"seed": "2", "ttft_ms": "55", "tpot_ms": "11"},
    }
    for name, options in variants.items():
        request = RunRequest(
            sut="fake",
            benchmark="llama2-70b",
            scenario=Scenario.SERVER,
            target_qps=300.0,
            overrides={"min_duration_ms": 1000, "min_query_count": 600},
            total_sample_count=600,
            sut_options={"jitter": "0.2", **options},
            output_dir=root / name,
            store=store,
        )
        execute(request, clock=ManualClock())
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
