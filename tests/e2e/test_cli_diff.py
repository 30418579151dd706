"""``infermeter diff`` exit codes for CI gates."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from infermeter.cli.main import app
from tests.results_fixtures import write_run

runner = CliRunner()


def test_exit_0_without_regression_and_4_when_worse(tmp_path):
    a = write_run(tmp_path / "a", n=1500, seed=1)
    b = write_run(tmp_path / "b", n=1500, seed=2)
    slow = write_run(tmp_path / "slow", n=1500, seed=2, latency_ms=220.0)
    same = runner.invoke(app, ["diff", str(a), str(b)])
    assert same.exit_code == 0, same.output
    assert "no significant difference" in same.output
    worse = runner.invoke(app, ["diff", str(a), str(slow), "--json"])
    assert worse.exit_code == 4
    data = json.loads(worse.output)
    assert data["verdict"] == "worse" and data["exit_code"] == 4
    p50 = next(m for m in data["metrics"] if m["name"] == "latency p50")
    assert p50["low"] > 0.02
    text = runner.invoke(app, ["diff", str(a), str(slow)])
    assert "verdict: worse" in text.output and "[+" in text.output


def test_a_negative_seed_is_a_usage_error(tmp_path):
    # It used to reach numpy and end in "internal error: ValueError".
    a = write_run(tmp_path / "a", n=50, seed=1)
    result = runner.invoke(app, ["diff", str(a), str(a), "--seed", "-1"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--seed'" in result.output
