"""Server metrics: a run scrapes /metrics, stores the series and the report draws them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from infermeter.servers.background import ThreadedServer
from infermeter.servers.mock import MockApp, MockConfig, MockProcess
from tests.cli_main import run_main

pytestmark = pytest.mark.integration

# Eight tokens per answer keep the mock cheap at the 250 queries/s that TTFT
# early stopping needs for a VALID Server run (about 460 queries for p99).
TIMED = MockConfig(
    mode="timed", ttft="const:0.03", itl="const:0.003", output_tokens="const:8"
)


class _NoMetrics(MockApp):
    """The mock's completions only: an endpoint with no /metrics (404)."""

    def build(self) -> web.Application:
        application = web.Application()
        application.router.add_post("/v1/completions", self._completions)
        return application


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with MockProcess(TIMED) as url:
        yield url


def _run(
    url: str, tmp: Path, *extra: str, duration: str = "2s"
) -> tuple[int, str, Path]:
    """A Server run; 2 s for the scraped series (at 200 ms), less where none is read."""
    out = tmp / "run"
    args = [
        "run", "--sut", "openai", "--url", url, "--model", "m",
        "--target-qps", "250", "--min-duration", duration, "--total-sample-count", "16",
        "--performance-sample-count", "16", "--output-dir", str(out),
        "--store", str(tmp / "store.db"), "--metrics-interval", "200ms", *extra,
    ]  # fmt: skip
    result = run_main(*args)
    # A verdict either way: 250 QPS against a 2 s TTFT bound can miss on a busy
    # machine, and the scraped series are the point here.
    code = 0 if result.code == 3 and "Result: INVALID" in result.output else None
    return code if code is not None else result.code, result.output, out


def test_run_stores_scraped_series_and_report_draws_them(
    mock_url: str, tmp_path: Path
) -> None:
    code, output, out = _run(mock_url, tmp_path)
    assert code == 0, output
    doc = json.loads((out / "run.json").read_text())
    assert doc["server_metrics"]["file"] == "server_metrics.json"
    assert "server_metrics.json" in doc["files"]
    data = json.loads((out / "server_metrics.json").read_text())
    assert data["sources"][0]["url"] == mock_url.replace("/v1", "/metrics")
    running = next(s for s in data["series"] if s["key"] == "running")
    assert running["metric"] == "vllm:num_requests_running"
    assert len(running["t_s"]) == len(running["values"]) >= 5  # 2 s at 200 ms
    assert running["t_s"] == sorted(running["t_s"])
    # 250 requests/s of ~0.05 s each: about 12 in flight at any scrape.
    assert max(running["values"]) >= 1
    assert running["counter"] is False

    report = tmp_path / "r.html"
    result = run_main("report", str(out), "-o", str(report))
    assert result.code == 0, result.output
    html = report.read_text()
    assert "Requests running (server)" in html
    assert "requests (vllm:num_requests_running)" in html
    assert "Requests in flight" in html  # the client's view beside it


def test_endpoint_without_metrics_runs_unchanged_with_one_info_line(
    tmp_path: Path,
) -> None:
    with ThreadedServer(_NoMetrics(TIMED)) as url:
        code, output, out = _run(url, tmp_path, duration="500ms")
    assert code == 0, output
    lines = [line for line in output.splitlines() if line.startswith("info:")]
    assert len(lines) == 1
    assert "no server metrics from" in lines[0] and "HTTP 404" in lines[0]
    doc = json.loads((out / "run.json").read_text())
    assert "server_metrics" not in doc
    assert not (out / "server_metrics.json").exists()
    # Unchanged: every request answered, and no reason about metrics. (VALID
    # itself is the machine's to give: 250 QPS can miss on a busy one, as
    # _run says.)
    assert doc["metrics"]["samples_failed"] == 0
    assert not any("metrics" in r for r in doc["verdict"]["reasons"])


def test_metrics_url_off_scrapes_nothing(mock_url: str, tmp_path: Path) -> None:
    code, output, out = _run(
        mock_url, tmp_path, "--metrics-url", "off", duration="500ms"
    )
    assert code == 0, output
    assert not (out / "server_metrics.json").exists()
    assert "info:" not in output


def test_sweep_stores_each_points_series(mock_url: str, tmp_path: Path) -> None:
    args = ["sweep", "--url", mock_url, "--model", "m", "--concurrency", "2,8",
            "--duration", "1", "--metrics-interval", "200ms", "--out", str(tmp_path)]  # fmt: skip
    result = run_main(*args)
    assert result.code == 0, result.output
    for point in ("00_c2", "01_c8"):
        folder = tmp_path / point / "performance"
        assert (folder / "result_summary.json").exists()
        data = json.loads((folder / "server_metrics.json").read_text())
        running = next(s for s in data["series"] if s["key"] == "running")
        assert len(running["values"]) >= 3
        assert max(running["values"]) >= 1
