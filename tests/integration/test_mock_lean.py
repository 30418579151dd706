"""The lean max-throughput mock (``serve-mock --server lean``) against the aiohttp one.

Both answer the same raw requests on 127.0.0.1; the lean server must send the
same status lines, headers (less aiohttp's Date and Server) and bodies, keep a
connection alive, answer pipelined and split requests in order, and refuse bad
requests as the aiohttp mock does.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from infermeter.errors import ConfigError
from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.mock import MockConfig, MockProcess, MockServer
from infermeter.servers.mock_agentic import AgenticStream
from infermeter.servers.mock_lean import LeanMock, LeanMockServer
from infermeter.servers.mock_served import served_latencies
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts

pytestmark = pytest.mark.integration

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi there you"}]}
USAGE = {"stream_options": {"include_usage": True}}


def _post(path: str, body: dict[str, Any] | bytes, extra: bytes = b"") -> bytes:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = b"POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" % (
        path.encode()
    )
    return head + extra + b"Content-Length: %d\r\n\r\n" % len(raw) + raw


def _get(path: str) -> bytes:
    return b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path.encode()


REQUESTS = [
    _post("/v1/chat/completions", {**CHAT, "stream": True, "max_tokens": 32, **USAGE}),
    _post("/v1/chat/completions", {**CHAT, "stream": True, "max_tokens": 3}),
    _post("/v1/chat/completions", {**CHAT, "max_tokens": 4}),
    _post(
        "/v1/completions", {"model": "m", "prompt": "a b c", "stream": True, **USAGE}
    ),
    _post("/v1/completions", {"model": "m", "prompt": [1, 2], "max_tokens": 2}),
    _post("/v1/completions", b"{not json"),
    _post("/v1/completions", {"model": "m"}),
    _get("/v1/models"),
    _get("/health"),
]


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def _read_answers(sock: socket.socket, count: int) -> list[bytes]:
    """``count`` whole responses (each has a Content-Length) from ``sock``."""
    sock.settimeout(10)
    buf, out = b"", []
    while len(out) < count:
        head_end = buf.find(b"\r\n\r\n")
        if head_end >= 0:
            length = int(re.search(rb"Content-Length: (\d+)", buf[:head_end])[1])  # type: ignore[index]
            end = head_end + 4 + length
            if len(buf) >= end:
                out.append(buf[:end])
                buf = buf[end:]
                continue
        data = sock.recv(65536)
        assert data, f"connection closed after {len(out)} of {count} answers"
        buf += data
    return out


def _exchange(port: int, requests: list[bytes], *, split: int = 0) -> list[bytes]:
    """Send all ``requests`` on one connection (in pieces of ``split`` bytes)."""
    raw = b"".join(requests)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        pieces = (
            [raw[i : i + split] for i in range(0, len(raw), split)] if split else [raw]
        )
        for piece in pieces:
            sock.sendall(piece)
        return _read_answers(sock, len(requests))


def _without_date_and_server(answer: bytes) -> bytes:
    return re.sub(rb"(Date|Server): [^\r]*\r\n", b"", answer)


def test_the_lean_mock_answers_byte_for_byte_as_the_aiohttp_mock() -> None:
    requests = [*REQUESTS, _get("/metrics")]  # the counts of those above
    with MockServer(MockConfig()) as url:
        theirs = [_exchange(_port(url), [r])[0] for r in requests]
    with LeanMockServer() as url:
        ours = [_exchange(_port(url), [r])[0] for r in requests]
    assert [_without_date_and_server(a) for a in theirs] == ours
    assert b"vllm:request_success_total" in ours[-1]
    statuses = [a.split(b"\r\n", 1)[0] for a in ours]
    assert statuses.count(b"HTTP/1.1 400 Bad Request") == 2
    stream = ours[0].split(b"\r\n\r\n", 1)[1]
    assert stream.count(b'"content":"tok "') == 32 and stream.endswith(b"[DONE]\n\n")
    assert b'"completion_tokens":32' in stream


def test_keep_alive_pipelined_and_split_requests_are_answered_in_order() -> None:
    with LeanMockServer() as url:
        one_by_one = []
        with socket.create_connection(("127.0.0.1", _port(url))) as sock:
            for request in REQUESTS:  # one connection, kept alive throughout
                sock.sendall(request)
                one_by_one += _read_answers(sock, 1)
        pipelined = _exchange(_port(url), REQUESTS)
        split = _exchange(_port(url), REQUESTS, split=7)  # headers and bodies cut
    assert pipelined == split == one_by_one
    assert len(one_by_one) == len(REQUESTS)


def test_a_client_asking_to_close_gets_its_answer_then_the_close() -> None:
    close = _post(
        "/v1/completions", {"model": "m", "prompt": "a"}, b"Connection: close\r\n"
    )
    with (
        LeanMockServer() as url,
        socket.create_connection(("127.0.0.1", _port(url))) as sock,
    ):
        sock.sendall(close + REQUESTS[0])  # the second one is never answered
        [answer] = _read_answers(sock, 1)
        sock.settimeout(10)
        assert sock.recv(65536) == b""
    assert b"Connection: close\r\n" in answer and b'"completion_tokens": 16' in answer


def test_malformed_http_gets_400_and_the_connection_closes() -> None:
    with LeanMockServer() as url:
        with socket.create_connection(("127.0.0.1", _port(url))) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            [answer] = _read_answers(sock, 1)
            assert sock.recv(65536) == b""
        with socket.create_connection(("127.0.0.1", _port(url))) as sock:
            sock.sendall(_get("/nowhere") + _get("/v1/completions"))
            missing, wrong_method = _read_answers(sock, 2)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"malformed HTTP" in answer
    assert missing.startswith(b"HTTP/1.1 404 ")
    assert wrong_method.startswith(b"HTTP/1.1 405 ")


def test_check_model_and_stats_match_what_was_served() -> None:
    mock = LeanMock("mine", check_model=True)
    with LeanMockServer(mock) as url:
        answers = _exchange(
            _port(url),
            [
                _post(
                    "/v1/completions",
                    {"model": "mine", "prompt": "a b", "max_tokens": 5},
                ),
                _post("/v1/completions", {"model": "other", "prompt": "a"}),
                _post("/v1/completions", b"[]", b"Authorization: Bearer x\r\n"),
            ],
        )
        with urllib.request.urlopen(url.replace("/v1", "/stats"), timeout=10) as r:
            stats = json.loads(r.read())
    assert [a.split(b" ", 2)[1] for a in answers] == [b"200", b"404", b"400"]
    assert b"The model `other` does not exist." in answers[1]
    assert stats == {
        "requests": 3,
        "completed": 1,
        "tokens": 5,
        "prompt_tokens": 2,
        "unknown_model": 1,
        "bad_request": 1,
        "with_authorization": 1,
    }


def test_the_request_log_stamps_every_answer_sent() -> None:
    with LeanMockServer() as url:
        _exchange(_port(url), REQUESTS)
        with urllib.request.urlopen(
            url.replace("/v1", "/mock/requests"), timeout=10
        ) as r:
            log = json.loads(r.read())
    # 7 completion requests came in; the 2 bad ones were not answered with tokens.
    assert (log["requests"], log["completed"], log["dropped"]) == (7, 5, 0)
    assert [t for t in log["tokens"] if t] == [32, 3, 4, 16, 2]
    ttft, _ = served_latencies(log)
    assert len(ttft) == 5 and all(t >= 0 for t in ttft)


def test_infermeter_streams_from_the_lean_mock_in_its_own_process() -> None:
    prompts = SyntheticPrompts(16, input_tokens=8, output_tokens=32)
    spec = LoadSpec(mode="concurrency", concurrency=8, requests=64, warmup_requests=0)
    with MockProcess(MockConfig(server="lean")) as url:
        with OpenAIHttpSUT(OpenAIConfig(url=url, model="m"), prompts) as sut:
            result = run_load(sut, spec, sample_count=16)
        with urllib.request.urlopen(
            url.replace("/v1", "/mock/requests"), timeout=10
        ) as r:
            log = json.loads(r.read())
    m = result.metrics
    assert (m.completed, m.failed) == (64, 0)
    assert (m.n_tokens == 32).all()
    assert log["completed"] == 64 and set(log["tokens"]) == {32}


def test_serve_mock_lean_writes_its_request_log_when_stopped(tmp_path: Path) -> None:
    log_file = tmp_path / "log.json"
    argv = [sys.executable, "-m", "infermeter", "serve-mock", "--server", "lean"]
    argv += ["--port", "0", "--request-log", str(log_file)]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "mock server (...) on http://host:port/v1, ..."
        url = re.search(r"http://\S+/v1", line)[0]  # type: ignore[index]
        assert "lean server" in line
        _exchange(_port(url), REQUESTS[:2])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0
    log = json.loads(log_file.read_text())
    assert (log["requests"], log["completed"], log["tokens"]) == (2, 2, [32, 3])


@pytest.mark.parametrize(
    "config",
    [
        MockConfig(mode="timed", server="lean"),
        MockConfig(style="llama.cpp", server="lean"),
        MockConfig(agentic=AgenticStream(reasoning_tokens=3), server="lean"),
        MockConfig(server="fast"),
    ],
)
def test_what_the_lean_mock_does_not_serve_is_refused(config: MockConfig) -> None:
    with pytest.raises(ConfigError, match="server"):
        config.validate()


def test_the_lean_server_stops_with_connections_open() -> None:
    server = LeanMockServer()
    url = server.start()
    sock = socket.create_connection(("127.0.0.1", _port(url)))
    try:
        sock.sendall(REQUESTS[0])
        _read_answers(sock, 1)
        start = time.monotonic()
        server.stop()
        sock.settimeout(10)
        assert sock.recv(65536) == b""  # cut, not left hanging
        assert time.monotonic() - start < 10
    finally:
        sock.close()


def _dechunk(answer: bytes) -> tuple[bytes, list[bytes]]:
    """(head, chunks) of a chunked response; the chunks' sizes are checked."""
    head, _, rest = answer.partition(b"\r\n\r\n")
    chunks = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert rest == b"\r\n"
            return head, chunks
        chunks.append(rest[:size])
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]


def _read_chunked(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    buf = b""
    while not buf.endswith(b"\r\n0\r\n\r\n"):
        data = sock.recv(65536)
        assert data, "connection closed mid-answer"
        buf += data
    return buf


def test_chunked_streams_carry_the_same_events_one_chunk_each() -> None:
    stream = REQUESTS[0]  # chat, 32 tokens, usage
    with LeanMockServer() as url:
        [plain] = _exchange(_port(url), [stream])
    with (
        LeanMockServer(LeanMock(chunked=True)) as url,
        socket.create_connection(("127.0.0.1", _port(url))) as sock,
    ):
        sock.sendall(stream)
        head, chunks = _dechunk(_read_chunked(sock))
        sock.sendall(REQUESTS[4])  # kept alive; not streamed: a Content-Length
        [whole] = _read_answers(sock, 1)
    assert b"Transfer-Encoding: chunked" in head and b"Content-Length" not in head
    assert b"".join(chunks) == plain.split(b"\r\n\r\n", 1)[1]
    assert len(chunks) == 32 + 3  # tokens, finish, usage, [DONE]
    assert all(c.startswith(b"data: ") and c.endswith(b"\n\n") for c in chunks)
    assert whole.startswith(b"HTTP/1.1 200 OK") and b"Content-Length" in whole


def test_infermeter_reads_chunked_streams_from_the_lean_mock() -> None:
    prompts = SyntheticPrompts(8, input_tokens=8, output_tokens=32)
    spec = LoadSpec(mode="concurrency", concurrency=4, requests=16, warmup_requests=0)
    config = MockConfig(server="lean", chunked=True)
    with MockProcess(config) as url:
        cfg = OpenAIConfig(url=url, model="m", api="chat")
        with OpenAIHttpSUT(cfg, prompts) as sut:
            result = run_load(sut, spec, sample_count=8)
    m = result.metrics
    assert (m.completed, m.failed) == (16, 0) and (m.n_tokens == 32).all()


def test_chunked_needs_the_lean_server() -> None:
    with pytest.raises(ConfigError, match="--chunked needs --server lean"):
        MockConfig(chunked=True).validate()
