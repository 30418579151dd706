"""A wrong endpoint fails in seconds with one line, before any load; a dead one
mid-run ends the run; runs that reach nothing blame neither rates nor the client."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from infermeter.errors import SUTConnectionError
from infermeter.runs.preflight import preflight
from infermeter.servers.background import ThreadedServer
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts
from tests.cli_main import run_main

pytestmark = pytest.mark.integration


def _infermeter(*args: str) -> subprocess.CompletedProcess[str]:
    """``infermeter ARGS`` in-process through ``main()`` (exit code, stdout, stderr
    as the console script gives them), without a ~1 s interpreter start each."""
    done = run_main(*args)
    return subprocess.CompletedProcess(list(args), done.code, done.stdout, done.stderr)


def _dead_url() -> str:
    server = MockServer()
    url = server.start()
    server.stop()  # nothing listens there any more
    return url


class _HtmlSite:
    """A web page where the API should be (a UI on the API's port)."""

    def build(self) -> web.Application:
        async def page(request: web.Request) -> web.Response:
            return web.Response(
                text="<!DOCTYPE html><html><body>Web UI</body></html>",
                content_type="text/html",
            )

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", page)
        return app


@pytest.fixture(scope="module")
def strict() -> Iterator[MockServer]:
    server = MockServer(MockConfig(mode="echo", model="served", check_model=True))
    server.start()
    yield server
    server.stop()


def _run_args(url: str, tmp: Path, model: str = "served", *extra: str) -> list[str]:
    return [
        "run", "--sut", "openai", "--url", url, "--model", model,
        "--scenario", "Offline", "--min-duration", "0s", "--min-query-count", "8",
        "--total-sample-count", "8", "--performance-sample-count", "8",
        "--output-dir", str(tmp / "run"), "--store", str(tmp / "store.db"), *extra,
    ]  # fmt: skip


def _one_line_failure(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("wrong port", ("cannot reach", "connection refused")),
        ("missing /v1", ("HTTP 404", "add /v1")),
        ("unknown model", ("model 'nope' is not served", "--model served")),
        ("html page", ("HTML page",)),
    ],
)
def test_a_wrong_endpoint_fails_fast_with_one_line_and_no_load(
    strict: MockServer, tmp_path: Path, case: str, words: tuple[str, ...]
) -> None:
    html = ThreadedServer(_HtmlSite())
    html_url = html.start() if case == "html page" else ""
    url, model = {
        "wrong port": (_dead_url(), "served"),
        "missing /v1": (strict.url.removesuffix("/v1"), "served"),
        "unknown model": (strict.url, "nope"),
        "html page": (html_url, "served"),
    }[case]
    before = strict.mock.stats["completed"]
    try:
        # The check itself, timed in-process (Python's start-up is not its time).
        start = time.monotonic()
        with pytest.raises(SUTConnectionError):
            preflight(OpenAIConfig(url=url, model=model), SyntheticPrompts(1))
        assert time.monotonic() - start < 5
        result = _infermeter(*_run_args(url, tmp_path, model))
    finally:
        html.stop()
    _one_line_failure(result, *words)
    assert strict.mock.stats["completed"] == before  # nothing was answered
    assert not (tmp_path / "run").exists()


def test_an_unreadable_model_list_is_a_note_not_a_failure(tmp_path: Path) -> None:
    server = MockServer(MockConfig(mode="echo"))

    async def broken(request: web.Request) -> web.Response:
        return web.json_response({"error": "offline"}, status=500)

    server.mock._models = broken  # type: ignore[method-assign]
    with server as url:
        result = _infermeter(*_run_args(url, tmp_path, "any-name"))
    assert result.returncode == 0, result.stderr
    assert "model list" in result.stderr and "HTTP 500" in result.stderr
    doc = json.loads((tmp_path / "run" / "run.json").read_text())
    assert doc["preflight"]["probe"]["token_source"] == "usage"


def test_a_non_streamed_server_run_is_refused(tmp_path: Path) -> None:
    args = [
        "run", "--sut", "openai", "--url", "http://127.0.0.1:9/v1", "--model", "m",
        "--scenario", "Server", "--sut-opt", "stream=false",
        "--output-dir", str(tmp_path / "run"),
    ]  # fmt: skip
    result = _infermeter(*args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count("\n") == 0  # one line, before any check
    assert "stream=true" in result.stderr and "TTFT" in result.stderr


def _reasons(tmp: Path) -> list[str]:
    doc: dict[str, Any] = json.loads((tmp / "run" / "run.json").read_text())
    return list(doc["verdict"]["reasons"])


def test_nothing_connected_blames_neither_rates_nor_the_client(tmp_path: Path) -> None:
    args = _run_args(_dead_url(), tmp_path, "m", "--no-preflight")
    args[args.index("Offline")] = "Server"
    result = _infermeter(*args, "--target-qps", "50", "--min-duration", "1s")
    assert result.returncode == 3, result.stderr
    reasons = _reasons(tmp_path)
    assert reasons[0].startswith("No sample completed")
    assert not any("Increase" in r or "QPS" in r for r in reasons), reasons
    assert "client may be the bottleneck" not in result.stderr
    assert "cannot connect" in " ".join(reasons)
    # The report draws no empty axes for it: the failures say why.
    page = tmp_path / "report.html"
    report = _infermeter(
        "report", str(tmp_path / "run"), "-o", str(page), "--no-compare"
    )
    assert report.returncode == 0, report.stderr
    html = page.read_text()
    assert 'class="chart" id="run0-' not in html and "cannot connect" in html


def test_an_endpoint_that_dies_mid_run_ends_the_run(tmp_path: Path) -> None:
    server = MockServer(MockConfig(mode="timed", ttft="const:0.01", itl="const:0.001"))
    url = server.start()
    args = _run_args(url, tmp_path, "m")
    args[args.index("Offline")] = "Server"
    args += ["--target-qps", "40", "--min-duration", "60s"]
    args += ["--sut-opt", "unreachable_after=1", "--min-query-count", "2400"]
    finished = threading.Event()
    stopped_at: list[float] = []

    def stop_after_some_answers() -> None:
        # The run is in-process on the main thread (it installs signal handlers).
        deadline = time.monotonic() + 60
        while server.mock.stats["completed"] < 20:
            if finished.is_set() or time.monotonic() > deadline:
                return
            time.sleep(0.05)
        server.stop()  # the endpoint goes away for good
        stopped_at.append(time.monotonic())

    watcher = threading.Thread(target=stop_after_some_answers, daemon=True)
    watcher.start()
    try:
        result = _infermeter(*args)
    finally:
        finished.set()
        watcher.join(10)
        server.stop()
    assert stopped_at, "the run ended before 20 answers"
    # Ended within seconds of the 1 s window, not after the 60 s schedule.
    assert time.monotonic() - stopped_at[0] < 30
    assert result.returncode == 3, result.stdout + result.stderr
    reasons = " ".join(_reasons(tmp_path))
    assert "The endpoint was unreachable" in reasons


def test_a_non_streamed_offline_run_reports_ttft_and_tpot_as_not_measured(
    strict: MockServer, tmp_path: Path
) -> None:
    args = _run_args(strict.url, tmp_path, "served", "--sut-opt", "stream=false")
    result = _infermeter(*args)
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "run" / "run.json").read_text())
    assert doc["metrics"]["ttft_ns"] is None and doc["metrics"]["tpot_ns"] is None
    assert doc["metrics"]["tokens_per_second"] > 0
    assert doc["sut"]["params"]["stream"] is False
    assert {"api", "max_tokens"} <= set(doc["sut"]["params"])
    assert "n/a (answers not streamed)" in result.stdout


def test_an_endpoint_that_never_answers_fails_in_seconds_not_a_minute() -> None:
    import socket

    from infermeter.runs.preflight import CHECK_TIMEOUT_S, PROBE_TIMEOUT_S

    with (
        socket.socket() as silent
    ):  # accepts connections (the kernel does), says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        start = time.monotonic()
        with pytest.raises(SUTConnectionError, match="no answer within 4 s"):
            preflight(OpenAIConfig(url=url, model="m"), SyntheticPrompts(1))
        # The look-up's 4 s timeout, with room for a busy machine (1 s was all a
        # late wake-up had); never the probe's 60 s.
        elapsed = time.monotonic() - start
        assert CHECK_TIMEOUT_S - 0.1 <= elapsed < CHECK_TIMEOUT_S + 6 < PROBE_TIMEOUT_S
