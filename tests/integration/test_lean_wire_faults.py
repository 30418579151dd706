"""Every fault of the lean wire, byte by byte, against a raw asyncio server.

The server (127.0.0.1, port 0) answers each request from a script: bytes to
write, then a clean close, a reset, or silence. Each fault runs on both wires
where aiohttp's handling is the yardstick: the per-sample reasons must be the
same text. Then what only the lean wire knows exactly: a reused connection
that lost a request before a single byte of the answer is resent once, one
that got even part of a status line is not.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from infermeter.loadgen.interfaces import QueryBatch
from infermeter.suts import http_wire
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, Timeouts
from infermeter.suts.prompts import SyntheticPrompts
from infermeter.testing import RecordingSink
from infermeter.testing.raw_server import RawServer, take_request

pytestmark = pytest.mark.integration

WIRES = ("lean", "aiohttp")
Step = bytes | str  # bytes to write, or "close" / "reset" / "stall"
Script = Callable[[int], list[Step]]  # request number (from 0) -> its answer


def _chunk(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


TOKEN = _chunk({"choices": [{"delta": {"content": "tok "}}]})
USAGE = _chunk({"choices": [], "usage": {"completion_tokens": 2}})
DONE = b"data: [DONE]\n\n"
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def chunked(*parts: bytes, end: bool = True) -> bytes:
    """A chunked streamed answer of ``parts`` (its last chunk unless ``end`` is False)."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return (
        SSE_HEAD
        + b"Transfer-Encoding: chunked\r\n\r\n"
        + body
        + (b"0\r\n\r\n" if end else b"")
    )


GOOD = chunked(TOKEN, TOKEN, USAGE, DONE)


class _Conn(asyncio.Protocol):
    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (request := take_request(self.buffer)) is not None:
            head, self.buffer = request
            self.server.heads.append(head)
            n = self.server.requests
            self.server.requests += 1
            if not self._answer(self.server.script(n)):
                return

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.closed += 1

    def _answer(self, steps: list[Step]) -> bool:
        for step in steps:
            if step == "close":
                self.transport.close()
                return False
            if step == "reset":
                self.transport.abort()
                return False
            if step == "stall":
                return False
            assert isinstance(step, bytes)
            self.transport.write(step)
        return True


class ScriptedServer(RawServer):
    def __init__(self, script: Script) -> None:
        super().__init__(lambda: _Conn(self))
        self.script = script
        self.requests = self.closed = 0
        self.heads: list[bytes] = []


Serve = Callable[[Script], tuple[ScriptedServer, str]]


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[ScriptedServer] = []

    def start(script: Script) -> tuple[ScriptedServer, str]:
        server = ScriptedServer(script)
        servers.append(server)
        return server, server.start()

    yield start
    for server in servers:
        server.stop()


def run(
    url: str,
    wire: str,
    n: int = 1,
    *,
    rounds: int = 1,
    key: ApiKey | None = None,
    **kw: object,
) -> RecordingSink:
    """``rounds`` bursts of ``n`` streamed chat requests (one after the other)."""
    config = OpenAIConfig(url=url, model="m", api="chat", wire=wire, **kw)  # type: ignore[arg-type]
    sink = RecordingSink()
    with OpenAIHttpSUT(config, SyntheticPrompts(4), api_key=key) as sut:
        for r in range(rounds):
            sink.done.clear()  # set by the last burst
            ids = np.arange(r * n, (r + 1) * n, dtype=np.int64)
            sut.issue_query(QueryBatch(ids, ids % 4, ids * 0), sink)
            assert sink.wait((r + 1) * n, timeout_s=20), (sink.completed, sink.failed)
    return sink


def one_reason(sink: RecordingSink) -> str:
    assert not sink.completed and len(set(sink.failed.values())) == 1, sink.failed
    return next(iter(sink.failed.values()))


FAULTS: dict[str, tuple[list[Step], str]] = {
    "reset before any answer": (
        ["reset"],
        "connection closed before any answer: ServerDisconnectedError",
    ),
    "part of a status line, then a reset": (
        [b"HTTP/1.", "reset"],
        "connection reset mid-response: ServerDisconnectedError",
    ),
    "reset mid-stream": (
        [chunked(TOKEN, end=False), "reset"],
        "connection reset mid-response: ClientPayloadError",
    ),
    "a clean close mid-stream": (
        [chunked(TOKEN, end=False), "close"],
        "connection reset mid-response: ClientPayloadError",
    ),
    "malformed chunk": (
        [chunked(TOKEN, b"data: {nope\n\n", DONE)],
        "malformed stream chunk",
    ),
    "stream ended before [DONE]": ([chunked(TOKEN)], "stream ended before [DONE]"),
    "data after [DONE]": ([chunked(TOKEN, DONE, TOKEN)], "data after [DONE]"),
    "server error in stream": (
        [chunked(TOKEN, _chunk({"error": {"message": "overloaded"}}))],
        "server error in stream: overloaded",
    ),
    "empty response": ([chunked(USAGE, DONE)], "empty response: no text streamed"),
    "HTTP 503 with a body": (
        [b"HTTP/1.1 503 Busy\r\nContent-Length: 9\r\n\r\ntoo busy\n"],
        "HTTP 503: too busy",
    ),
    "HTTP 500 without a body": (
        [b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"],
        "HTTP 500",
    ),
}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("fault", FAULTS, ids=list(FAULTS))
def test_each_fault_gives_the_same_reason_on_both_wires(
    serve: Serve, wire: str, fault: str
) -> None:
    steps, reason = FAULTS[fault]
    server, url = serve(lambda n: steps)
    sink = run(url, wire, n=2)
    assert one_reason(sink).startswith(reason), sink.failed
    # A fresh connection's failure is never resent: one request per sample.
    assert server.requests == 2


@pytest.mark.parametrize("wire", WIRES)
def test_a_stall_times_out_on_the_first_token_then_the_total(
    serve: Serve, wire: str
) -> None:
    _, url = serve(lambda n: [chunked(TOKEN, end=False), "stall"] if n else ["stall"])
    first = run(url, wire, timeouts=Timeouts(first_token_s=0.3, total_s=0.6))
    assert one_reason(first) == "timeout: no first token within 0.3 s"
    total = run(url, wire, timeouts=Timeouts(first_token_s=0.3, total_s=0.6))
    assert one_reason(total) == "timeout: request took over 0.6 s"
    only_total = run(url, wire, timeouts=Timeouts(total_s=0.4))  # no first-token limit
    assert one_reason(only_total) == "timeout: request took over 0.4 s"


@pytest.mark.parametrize("wire", WIRES)
def test_no_server_cannot_connect(wire: str) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nobody listens there now
    sink = run(f"http://127.0.0.1:{port}/v1", wire)
    # aiohttp on uvloop words it "Connect call failed ('127.0.0.1', PORT)".
    assert one_reason(sink).startswith("cannot connect: ")
    if wire == "lean":
        assert one_reason(sink) == "cannot connect: Connection refused"


def test_a_connect_that_hangs_times_out() -> None:
    # A listener that never accepts, its backlog full: the next SYN waits unanswered.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    try:
        sink = run(
            f"http://127.0.0.1:{port}/v1", "lean", timeouts=Timeouts(connect_s=0.3)
        )
    finally:
        for s in [listener, *fillers]:
            s.close()
    reason = one_reason(sink)
    # Linux drops the SYN (a timeout); a kernel that refuses it says so instead.
    assert reason in (
        "timeout: no connection within 0.3 s",
        "cannot connect: Connection refused",
    )


BODIES = {
    "chunked": GOOD,
    "content-length": SSE_HEAD + b"Content-Length: %d\r\n\r\n" % len(TOKEN + USAGE + DONE)
    + TOKEN + USAGE + DONE,
    "connection: close, read to the end": SSE_HEAD + b"Connection: close\r\n\r\n"
    + TOKEN + USAGE + DONE,
}  # fmt: skip


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("body", BODIES, ids=list(BODIES))
def test_every_body_framing_completes(serve: Serve, wire: str, body: str) -> None:
    closes = b"Connection: close" in BODIES[body]
    server, url = serve(lambda n: [BODIES[body], "close"] if closes else [BODIES[body]])
    sink = run(url, wire, n=3, rounds=2)
    assert not sink.failed and len(sink.completed) == 6
    assert all(tokens == 2 for tokens, _ in sink.completed.values())
    # Kept-alive answers reuse connections; "Connection: close" ones each need one.
    assert server.connections == (6 if closes else 3) or (
        not closes and server.connections < 6
    )


def test_a_reused_connection_lost_unanswered_is_resent_once(serve: Serve) -> None:
    # The second burst comes on the first burst's kept-alive connections; the
    # server resets each of them unread: resent once, on new connections.
    server, url = serve(lambda n: ["reset"] if 2 <= n < 4 else [GOOD])
    sink = run(url, "lean", n=2, rounds=2)
    assert not sink.failed and len(sink.completed) == 4
    assert server.requests == 6  # 4 answered, 2 lost unread and resent


def test_a_resend_that_fails_again_is_not_sent_a_third_time(serve: Serve) -> None:
    server, url = serve(lambda n: [GOOD] if n == 0 else ["reset"])
    sink = run(url, "lean", n=1, rounds=2)
    assert sink.failed == {
        1: "connection closed before any answer: ServerDisconnectedError"
    }
    assert server.requests == 3  # the first; the second, and its one resend


def test_part_of_a_status_line_on_a_reused_connection_is_not_resent(
    serve: Serve,
) -> None:
    server, url = serve(lambda n: [GOOD] if n == 0 else [b"HTTP/1", "reset"])
    sink = run(url, "lean", n=1, rounds=2)
    assert sink.failed == {1: "connection reset mid-response: ServerDisconnectedError"}
    assert server.requests == 2  # the server saw the request: never twice


def test_unasked_bytes_on_an_idle_connection_retire_it(serve: Serve) -> None:
    server, url = serve(
        lambda n: [GOOD + b"HTTP/1.1 200 OK\r\n\r\n"] if n == 0 else [GOOD]
    )
    sink = run(url, "lean", n=1, rounds=2)
    assert not sink.failed and len(sink.completed) == 2
    assert server.connections == 2 and server.requests == 2


def test_connections_idle_past_the_limit_are_closed(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_wire, "KEEPALIVE_S", 0.2)
    server, url = serve(lambda n: [GOOD])
    config = OpenAIConfig(url=url, model="m", api="chat")
    sink = RecordingSink()
    with OpenAIHttpSUT(config, SyntheticPrompts(4)) as sut:
        ids = np.arange(3, dtype=np.int64)
        sut.issue_query(QueryBatch(ids, ids % 4, ids * 0), sink)
        assert sink.wait(3, timeout_s=20) and not sink.failed
        deadline = time.monotonic() + 10
        while server.closed < server.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        # Closed by the client's sweep while the SUT was still open and idle.
        assert server.closed == server.connections >= 1


def test_at_most_max_connections_at_once(serve: Serve) -> None:
    server, url = serve(lambda n: [GOOD])
    sink = run(url, "lean", n=12, rounds=2, max_connections=3)
    assert not sink.failed and len(sink.completed) == 24
    assert server.connections == 3


def test_the_request_carries_the_key_and_a_failure_never_shows_it(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", "sk-secret-123")
    key = ApiKey.load(env="K")
    echo = (
        b"HTTP/1.1 401 No\r\nContent-Length: 30\r\n\r\nbad key: Bearer sk-secret-123\n"
    )
    server, url = serve(lambda n: [echo])
    sink = run(url, "lean", key=key)
    assert "sk-secret-123" not in one_reason(sink) and one_reason(sink).startswith(
        "HTTP 401"
    )
    head = server.heads[0].decode()
    assert "Authorization: Bearer sk-secret-123" in head
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")


def test_a_fleet_spreads_over_its_replicas(serve: Serve) -> None:
    a, url_a = serve(lambda n: [GOOD])
    b, url_b = serve(lambda n: [GOOD])
    sink = run(url_a, "lean", n=8, replica_urls=(url_a, url_b))
    assert not sink.failed and len(sink.completed) == 8
    assert a.requests == b.requests == 4


def test_the_lean_wire_on_asyncios_own_loop(serve: Serve) -> None:
    # uvloop=false: the same protocol and pool on asyncio's selector loop.
    server, url = serve(
        lambda n: [GOOD] if n != 2 else [chunked(TOKEN, end=False), "reset"]
    )
    sink = run(url, "lean", n=2, rounds=2, use_uvloop=False)
    assert len(sink.completed) == 3
    assert list(sink.failed.values()) == [
        "connection reset mid-response: ClientPayloadError"
    ]
    assert server.requests == 4  # the answer had begun: never resent
