"""``infermeter run`` and ``sweep`` against a fleet of mock replicas (repeated --url)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.errors import ConfigError
from infermeter.servers.mock import MockConfig, MockServer

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A sweep without --out writes runs/sweep-<time> where it runs: here.
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def fleet() -> Iterator[list[MockServer]]:
    servers = [MockServer(MockConfig(mode="echo")) for _ in range(2)]
    for server in servers:
        server.start()
    yield servers
    for server in servers:
        server.stop()


def _urls(servers: list[MockServer]) -> list[str]:
    return [arg for s in servers for arg in ("--url", s.url)]


@pytest.mark.parametrize("routing", ["round-robin", "least-outstanding", "prefix"])
def test_run_over_two_replicas_counts_each(
    fleet: list[MockServer], tmp_path: Path, routing: str
) -> None:
    before = [s.mock.stats["requests"] for s in fleet]
    out = tmp_path / "run"
    args = [
        "run", "--sut", "openai", *_urls(fleet), "--routing", routing,
        "--model", "m", "--scenario", "Offline", "--min-duration", "0s",
        "--min-query-count", "40", "--total-sample-count", "16",
        "--performance-sample-count", "16", "--output-dir", str(out),
        "--store", str(tmp_path / "store.db"),
        "--no-preflight",  # its one probe per replica is not the run's
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "run.json").read_text())
    block = doc["fleet"]
    assert block["routing"] == routing
    rows = block["replicas"]
    assert [r["url"] for r in rows] == [s.url for s in fleet]
    served = [s.mock.stats["requests"] - b for s, b in zip(fleet, before, strict=True)]
    # What the client says it sent each replica is what each replica served.
    assert [r["requests"] for r in rows] == served
    assert sum(served) == doc["metrics"]["samples_issued"]
    assert all(r["completed"] == r["requests"] and r["failed"] == 0 for r in rows)
    if routing != "prefix":  # synthetic prompts share no prefix: both replicas work
        assert min(served) > 0
    assert all(r["ttft_ms"]["p90"] >= 0 for r in rows if r["completed"])
    # Each replica's own /metrics was scraped and is named by its replica.
    sources = doc["server_metrics"]["sources"]
    assert [src["replica"] for src in sources] == [s.url for s in fleet]
    assert all(src["url"].endswith("/metrics") for src in sources)
    report = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(out), "-o", str(report)])
    assert result.exit_code == 0, result.output
    html = report.read_text()
    assert f"Replicas (routing: {routing})" in html
    assert all(f"<td>{s.url}</td>" in html for s in fleet)


def test_bad_routing_is_a_usage_error(fleet: list[MockServer], tmp_path: Path) -> None:
    args = ["run", "--sut", "openai", *_urls(fleet), "--routing", "random",
            "--model", "m", "--output-dir", str(tmp_path / "r")]  # fmt: skip
    result = CliRunner().invoke(app, args)
    # main() prints a ConfigError as one line and exits 2.
    assert isinstance(result.exception, ConfigError)
    assert "Unknown routing policy 'random'" in str(result.exception)


def test_sweep_over_two_replicas(fleet: list[MockServer], tmp_path: Path) -> None:
    before = [s.mock.stats["requests"] for s in fleet]
    args = ["sweep", *_urls(fleet), "--model", "m", "--concurrency", "4",
            "--requests", "20", "--json", "--no-preflight"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    served = [s.mock.stats["requests"] - b for s, b in zip(fleet, before, strict=True)]
    assert served == [10, 10]  # round-robin by default


def test_prefix_routing_keeps_a_shared_prefix_on_one_replica(
    fleet: list[MockServer],
) -> None:
    before = [s.mock.stats["requests"] for s in fleet]
    args = ["sweep", *_urls(fleet), "--model", "m", "--concurrency", "1",
            "--requests", "12", "--prompts", "shared-prefix:2:64",
            "--routing", "prefix", "--json", "--no-preflight"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    served = [s.mock.stats["requests"] - b for s, b in zip(fleet, before, strict=True)]
    # One request at a time: nothing weighs against the cached prefix, so the
    # first replica keeps both system prompts (round-robin would split 6/6).
    assert served == [12, 0]


def test_each_client_process_routes_its_own_slice(
    fleet: list[MockServer], tmp_path: Path
) -> None:
    before = [s.mock.stats["requests"] for s in fleet]
    out = tmp_path / "run"
    args = [
        "run", "--sut", "openai", *_urls(fleet), "--routing", "round-robin",
        "--model", "m", "--scenario", "Offline", "--min-duration", "0s",
        "--min-query-count", "40", "--total-sample-count", "16",
        "--performance-sample-count", "16", "--output-dir", str(out),
        "--store", str(tmp_path / "store.db"), "--sut-opt", "workers=2",
        "--no-preflight",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "run.json").read_text())["fleet"]["replicas"]
    served = [s.mock.stats["requests"] - b for s, b in zip(fleet, before, strict=True)]
    # Two processes, each round-robin over both replicas: the routes they
    # report add up to what each replica served.
    assert [r["requests"] for r in rows] == served
    assert min(served) > 0
