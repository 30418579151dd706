"""``infermeter serve-mock`` as a user runs it: a subprocess answering real requests."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app

pytestmark = pytest.mark.integration


def test_serve_mock_subprocess_answers_and_counts(tmp_path: Path) -> None:
    log = tmp_path / "requests.json"
    cmd = [
        sys.executable,
        "-m",
        "infermeter",
        "serve-mock",
        "--mode",
        "echo",
        "--port",
        "0",
        "--request-log",
        str(log),
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "mock server (echo) on http://127.0.0.1:" in line
        url = line.split(" on ")[1].split(",")[0]
        body = json.dumps({"model": "m", "prompt": "hello there", "max_tokens": 5})
        request = urllib.request.Request(
            url + "/completions",
            data=body.encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            answer = json.loads(resp.read())
        assert answer["choices"][0]["text"] == "hello there "
        assert answer["usage"]["completion_tokens"] == 2
        with urllib.request.urlopen(url.replace("/v1", "/stats"), timeout=10) as resp:
            assert json.loads(resp.read())["completed"] == 1
    finally:
        proc.terminate()
        proc.wait(10)
    # On exit the mock wrote its own log: the one request, its two tokens.
    served = json.loads(log.read_text())
    assert (served["requests"], served["completed"], served["tokens"]) == (1, 1, [2])
    [received], [last] = served["received_ns"], served["last_byte_ns"]
    assert received <= served["first_byte_ns"][0] <= last


def test_request_log_needs_one_worker(tmp_path: Path) -> None:
    args = ["serve-mock", "--port", "8123", "--workers", "2"]
    result = CliRunner().invoke(app, [*args, "--request-log", str(tmp_path / "l")])
    assert result.exit_code != 0
    assert "--request-log needs --workers 1" in str(result.exception)


def test_serve_mock_help_and_bad_mode() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["serve-mock", "--help"])
    assert result.exit_code == 0 and "Examples:" in result.output
    result = runner.invoke(app, ["serve-mock", "--mode", "nope", "--port", "0"])
    assert result.exit_code != 0
    assert "Unknown mock mode 'nope'" in str(result.exception)
