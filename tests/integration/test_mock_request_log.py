"""The mock's own per-request log (GET /mock/requests) against the requests it served."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import zlib
from typing import Any

import pytest

from infermeter.servers.faults import FaultConfig
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.servers.mock_served import (
    UNSET,
    ServedLog,
    prompt_crc,
    served_latencies,
)

pytestmark = pytest.mark.integration

TTFT_S, ITL_S, OUT = 0.02, 0.004, 5

SLACK_S = 0.002


def _post(url: str, path: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return bytes(resp.read())


def _log(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.replace("/v1", "/mock/requests"), timeout=10) as r:
        return dict(json.loads(r.read()))


def test_the_log_counts_every_request_served_with_server_side_times() -> None:
    cfg = MockConfig(
        mode="timed",
        ttft=f"const:{TTFT_S}",
        itl=f"const:{ITL_S}",
        output_tokens=f"const:{OUT}",
    )
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with MockServer(cfg) as url:
        for _ in range(3):
            _post(url, "/completions", {"model": "m", "prompt": "a b", "stream": True})
        _post(url, "/chat/completions", {**chat, "stream": True})
        _post(url, "/completions", {"model": "m", "prompt": "a b"})  # not streamed
        stats = json.loads(urllib.request.urlopen(url.replace("/v1", "/stats")).read())
        log = _log(url)
    served = stats["completed"]
    assert served == 5
    assert (log["requests"], log["completed"], log["dropped"]) == (served, served, 0)
    assert log["tokens"] == [OUT] * served == [stats["tokens"] // served] * served
    ttft, tpot = served_latencies(log)
    assert len(ttft) == len(tpot) == served
    # The server waited its TTFT, then its gaps on absolute deadlines, before
    # writing: lower bounds only (a busy machine makes times longer, and a late
    # first token shortens the gaps that follow it). The event loop may wake a
    # timer up to its clock resolution early, and the server's deadlines count
    # from just before it stamps the request received: 2 ms of slack.
    assert all(t >= TTFT_S - SLACK_S for t in ttft)
    whole = TTFT_S + (OUT - 1) * ITL_S
    for received, first, last in zip(
        log["received_ns"], log["first_byte_ns"], log["last_byte_ns"], strict=True
    ):
        assert received < first <= last
        assert (last - received) / 1e9 >= whole - SLACK_S


def test_a_failed_request_is_received_but_not_completed() -> None:
    cfg = MockConfig(mode="faults", faults=FaultConfig(error_rate=1.0))
    with MockServer(cfg) as url:
        with pytest.raises(urllib.error.HTTPError):
            _post(url, "/completions", {"model": "m", "prompt": "a", "stream": True})
        log = _log(url)
    assert (log["requests"], log["completed"]) == (1, 0)
    assert log["first_byte_ns"] == log["last_byte_ns"] == [UNSET]
    assert served_latencies(log) == ([], [])


def test_a_full_log_counts_what_it_drops() -> None:
    log = ServedLog(capacity=2)
    stamps = [log.receive() for _ in range(3)]
    for stamp in stamps:
        stamp.first_byte()
        stamp.done(1)
    out = log.as_json()
    assert (out["requests"], out["completed"], out["dropped"]) == (2, 2, 1)
    assert out["tokens"] == [1, 1]


def test_each_row_carries_the_crc_of_its_prompt_words() -> None:
    with MockServer(MockConfig()) as url:
        _post(url, "/completions", {"model": "m", "prompt": " a  b\nc "})
        _post(
            url, "/chat/completions", {"model": "m", "messages": [{"content": "x y"}]}
        )
        with pytest.raises(urllib.error.HTTPError):  # refused: no prompt
            _post(url, "/completions", {"model": "m"})
        log = _log(url)
    assert log["prompt_crc32"] == [
        prompt_crc(("a", "b", "c")),
        prompt_crc(("x", "y")),
        UNSET,
    ]
    assert prompt_crc(["a", "b"]) == zlib.crc32(b"a b")
