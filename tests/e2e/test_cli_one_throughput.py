"""``run``, ``diff``, ``compare`` and ``report`` print the same tokens/s for one
folder, each stating the definition it follows (MLPerf's for MLPerf runs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.throughput import definition, format_rate

pytestmark = pytest.mark.integration
runner = CliRunner()


@pytest.mark.parametrize("scenario", ["Server", "Offline"])
def test_every_command_prints_the_runs_own_tokens_per_second(
    tmp_path: Path, scenario: str
) -> None:
    folder = tmp_path / "run"
    args = [
        "run", "--sut", "fake", "--benchmark", "llama2-70b", "--scenario", scenario,
        "--target-qps", "200", "--min-duration", "500ms", "--min-query-count", "64",
        "--total-sample-count", "16", "--performance-sample-count", "16",
        "--output-dir", str(folder), "--store", str(tmp_path / "store.db"),
    ]  # fmt: skip
    run = runner.invoke(app, args)
    assert run.exit_code in (0, 3), run.output
    tps = json.loads((folder / "run.json").read_text())["metrics"]["tokens_per_second"]
    shown = format_rate(tps)
    said = definition(scenario, tokens=True)
    assert re.search(rf"tokens/s\s*│\s*{re.escape(shown)}\s*│", run.stdout), run.stdout
    assert said.split(":")[0] in run.stdout  # "MLPerf Server" / "MLPerf Offline"

    diff = runner.invoke(app, ["diff", str(folder), str(folder)])
    assert diff.exit_code == 0, diff.output
    row = next(line for line in diff.stdout.splitlines() if "throughput" in line)
    assert row.count(shown) == 2  # A and B: the run's own figure
    assert said.split(":")[0] in diff.stdout

    compare = runner.invoke(
        app, ["compare", str(folder), "--builtin", "--store", str(tmp_path / "s.db")]
    )
    assert compare.exit_code == 0, compare.output
    assert shown in compare.stdout and said.split(":")[0] in compare.stdout

    html = tmp_path / "report.html"
    report = runner.invoke(
        app, ["report", str(folder), "-o", str(html), "--no-compare"]
    )
    assert report.exit_code == 0, report.output
    page = html.read_text()
    assert f"<td>{shown}</td>" in page and said in page
