"""The report in headless Chromium: charts render, no console errors, no injected script runs.

Skips when Debian's chromium is absent (apt-get install chromium).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from tests.results_fixtures import write_run

from infermeter.report.html import build_report, write_report
from infermeter.results.runfolder import load_run

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None
)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"),
]
PAYLOAD = '<script>document.body.setAttribute("data-pwned","1")</script>'
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','2')\">"


def _dump_dom(html_path, tmp_path):
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
            html_path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def test_report_renders_charts_without_console_errors(tmp_path):
    folder = write_run(
        tmp_path / "run",
        failures=2,
        sut_name=PAYLOAD,
        reasons=(IMG,),
        responses=[PAYLOAD, IMG, "</script><script>document.title='pwned'</script>"],
    )
    html_path = write_report(build_report([load_run(folder)]), tmp_path / "r.html")
    dom, log = _dump_dom(html_path, tmp_path)
    consoles = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert consoles == []
    charts = re.findall(r'<div class="chart[^"]*" id="(run0-\d)"', dom)
    assert len(charts) == 8  # latency x2, TTFT, TPOT, output length, 3 over time
    for chart_id in charts:  # every chart div holds a plotly SVG
        start = dom.index(f'id="{chart_id}"')
        assert 'class="main-svg"' in dom[start : start + 20_000], chart_id
    assert "data-pwned" not in re.search(r"<body[^>]*>", dom).group(0)
    assert "<title>pwned" not in dom


def test_report_of_a_real_run_opens_without_console_errors(tmp_path):
    pytest.importorskip("infermeter.runs.run")
    from typer.testing import CliRunner

    from infermeter.cli.main import app

    runner = CliRunner()
    run_dir, report = tmp_path / "run", tmp_path / "report.html"
    args = [
        "run",
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
        "--min-query-count",
        "256",
        "--total-sample-count",
        "256",
        "--sut-opt",
        "jitter=0.2",
        "--output-dir",
        str(run_dir),
        "--store",
        str(tmp_path / "s.sqlite"),
    ]
    assert runner.invoke(app, args).exit_code in (0, 3)  # 3: INVALID, still a run
    result = runner.invoke(
        app,
        [
            "report",
            str(run_dir),
            "-o",
            str(report),
            "--gpu",
            "h100-sxm",
            "--gpus",
            "8",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    assert result.exit_code == 0, result.output
    dom, log = _dump_dom(report, tmp_path)
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []
    assert dom.count('class="main-svg"') >= 7 * 2
    assert "result ID v4.1-" in dom and "per_million_tokens" in dom
