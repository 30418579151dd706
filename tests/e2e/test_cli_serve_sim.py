"""``infermeter serve-sim`` as a user runs it: a subprocess, help, and bad input.

The servers that serve run as children (as a user starts them); bad input is
checked in-process through ``main()`` (the console script's exit code and line),
with the socket's bind trapped: a server that took the bad input is caught there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from tests.cli_main import Result, run_main
from tests.no_serving import Served, trap_binds

pytestmark = pytest.mark.integration
CMD = [sys.executable, "-m", "infermeter", "serve-sim"]


@pytest.fixture
def _no_serving(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    trap_binds(monkeypatch)
    yield


def _refused(*args: str) -> Result:
    """``infermeter ARGS``, which must end before any server binds."""
    try:
        return run_main(*args)
    except Served:
        pytest.fail(f"infermeter {' '.join(args)} started serving")


def test_serve_sim_subprocess_answers_with_simulated_timing() -> None:
    proc = subprocess.Popen(
        [*CMD, "--port", "0", "--served-model", "m"], stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("simulated 8x H100 SXM (infermeter performance model)")
        assert "4 replica(s) of TP2 FP8" in line and "not a measurement" in line
        url = line.split(" on ")[1].split(" ")[0]
        body = json.dumps({"model": "m", "prompt": "a b c " * 100, "max_tokens": 7})
        request = urllib.request.Request(
            url + "/completions",
            data=body.encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            answer = json.loads(resp.read())
        assert answer["usage"]["prompt_tokens"] == 300
        assert answer["usage"]["completion_tokens"] == 7
        assert answer["model"] == "m"
        with urllib.request.urlopen(url.replace("/v1", "/stats"), timeout=10) as resp:
            stats = json.loads(resp.read())
        assert stats["completed"] == 1 and stats["tokens"] == 7
        assert stats["tp"] == 2 and stats["replicas"] == 4
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--accelerator", "h300"],
            "error: Unknown accelerator 'h300'. Known: a100-sxm",
        ),
        (["--model", "gpt5"], "error: Unknown model 'gpt5'"),
        (["--count", "1", "--tp", "1", "--precision", "fp16"], "needs 138.1 GB"),
        (["--time-scale", "0"], "error: --time-scale must be > 0 (got 0)."),
        (
            ["--prefix-cache-tokens", "-5"],
            "error: --prefix-cache-tokens must be -1 (the whole KV cache), 0 (off)",
        ),
        (
            ["--port", "65534", "--replicas", "4"],
            "error: --port 65534 with --replicas 4 runs past port 65535",
        ),
    ],
)
@pytest.mark.usefixtures("_no_serving")
def test_bad_input_is_one_line_with_exit_2(args: list[str], message: str) -> None:
    done = _refused("serve-sim", "--port", "0", *args)
    assert done.code == 2, done.output
    assert message in done.stderr and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


@pytest.mark.usefixtures("_no_serving")
def test_a_port_outside_0_to_65535_is_a_usage_error() -> None:
    # -1 used to reach bind() and end in "internal error: OverflowError".
    for cmd, port in (("serve-sim", "-1"), ("serve-mock", "70000")):
        result = _refused(cmd, "--port", port)
        assert result.code == 2, result.output
        assert "Invalid value for '--port'" in result.output


@pytest.mark.usefixtures("_no_serving")
def test_help_lists_examples_and_the_command_is_registered() -> None:
    result = run_main("serve-sim", "--help")
    assert result.code == 0 and "Examples:" in result.output
    assert "--time-scale" in result.output and "--chunk-ms" in result.output
    result = _refused("serve-sim", "--chunk-ms", "0", "--port", "0")
    assert result.code == 2 and result.stderr.startswith("error: "), result.output


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as resp:
        data: bytes = resp.read()
    return data


def _complete(url: str, prompt: str) -> None:
    body = json.dumps({"model": "llama2-70b", "prompt": prompt, "max_tokens": 2})
    request = urllib.request.Request(
        url + "/completions",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        resp.read()


def test_serve_sim_replicas_one_port_each_with_prefix_caches() -> None:
    args = ["--replicas", "2", "--port", "0", "--count", "2", "--tp", "2"]
    proc = subprocess.Popen([*CMD, *args], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        head = proc.stderr.readline()
        assert head.startswith("2 replicas of simulated 2x H100 SXM")
        assert "not a measurement" in head
        urls = [proc.stderr.readline().split(": ", 1)[1].strip() for _ in range(2)]
        assert urls[0] != urls[1] and all(u.endswith("/v1") for u in urls)
        prompt = " ".join(f"w{i}" for i in range(512))
        for _ in range(2):  # the second request finds its 512 words cached
            _complete(urls[0], prompt)
        stats = [json.loads(_get(u.replace("/v1", "/stats"))) for u in urls]
        assert stats[0]["requests"] == 2 and stats[1]["requests"] == 0
        assert stats[0]["prefix_query_tokens"] == 1024
        assert stats[0]["prefix_hit_tokens"] == 511  # all but the last token
        text = _get(urls[0].replace("/v1", "/metrics")).decode()
        assert 'vllm:prefix_cache_hits_total{model_name="llama2-70b"} 511.0' in text
        assert (
            "vllm:kv_cache_usage_perc" in text and "vllm:num_requests_running" in text
        )
    finally:
        proc.terminate()
        proc.wait(10)
