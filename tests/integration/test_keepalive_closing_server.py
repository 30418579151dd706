"""Servers that close keep-alive connections on their own (llama-server's
cpp-httplib drops a connection idle for 5 s): the client loses no request.

The server here is raw asyncio, so it can do what aiohttp's own server never
does: answer with keep-alive announced (HTTP/1.1, no ``Connection: close``) and
then drop the connection when the next request arrives on it (the server's
timer fired as the request came: the worst case of that race, made certain).
A client that reuses such a connection writes into a reset socket: "Can not
write request body", a sample that never reached the server.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import numpy as np
import pytest

from infermeter.loadgen.interfaces import QueryBatch
from infermeter.suts import http_wire
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts
from infermeter.testing import RecordingSink
from infermeter.testing.raw_server import RawServer, take_request

pytestmark = pytest.mark.integration

_ANSWER = json.dumps(
    {
        "choices": [{"text": "a b", "finish_reason": "length"}],
        "usage": {"completion_tokens": 2},
    }
).encode()


class _Connection(asyncio.Protocol):
    def __init__(self, server: ClosingServer) -> None:
        self.server = server
        self.buffer = b""
        self.answered_at: float | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        request = take_request(self.buffer)
        if request is None:
            return
        self.buffer = request[1]
        assert self.transport is not None
        self.server.received += 1
        if self.server.drops(self.answered_at):
            self.server.dropped += 1
            if self.server.partial:  # part of an answer: the request was read
                self.transport.write(self.server.partial)
                self.transport.close()
                return
            self.transport.abort()  # RST: the request is lost unread
            return
        self.server.answered += 1
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(_ANSWER), _ANSWER)
        )
        self.answered_at = time.monotonic()


class ClosingServer(RawServer):
    """Drops a kept-alive connection when a request comes after it idled
    ``idle_s`` (0: after every response; None: every request, even a new
    connection's first), sending ``partial`` (part of an answer) first if given."""

    def __init__(self, idle_s: float | None, partial: bytes = b"") -> None:
        self.idle_s = idle_s
        self.partial = partial
        super().__init__(lambda: _Connection(self))
        self.answered = self.dropped = self.received = 0

    def drops(self, answered_at: float | None) -> bool:
        if self.idle_s is None:
            return True
        if answered_at is None:
            return False
        return time.monotonic() - answered_at >= self.idle_s


def _batch(n: int, start: int) -> QueryBatch:
    ids = np.arange(start, start + n, dtype=np.int64)
    return QueryBatch(ids, ids % 8, np.zeros(n, dtype=np.int64))


def _rounds(url: str, pause_s: float, rounds: int = 3, n: int = 4) -> RecordingSink:
    """``rounds`` bursts of ``n`` requests with ``pause_s`` of silence between."""
    prompts = SyntheticPrompts(8, input_tokens=4, output_tokens=2)
    sink = RecordingSink()
    with OpenAIHttpSUT(OpenAIConfig(url=url, model="m", stream=False), prompts) as sut:
        for r in range(rounds):
            sut.issue_query(_batch(n, r * n), sink)
            assert sink.wait((r + 1) * n, timeout_s=20)
            time.sleep(pause_s)
    return sink


@pytest.fixture
def idle_closing(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClosingServer]:
    # The server's idle limit, scaled down from cpp-httplib's 5 s (and the
    # client's own limit with it) so the test takes a second, not 15.
    monkeypatch.setattr(http_wire, "KEEPALIVE_S", http_wire.KEEPALIVE_S * 0.1)
    server = ClosingServer(idle_s=0.5)
    yield server
    server.stop()


def test_connections_idle_past_a_servers_limit_are_not_reused(
    idle_closing: ClosingServer,
) -> None:
    url = idle_closing.start()
    sink = _rounds(url, pause_s=0.6)
    assert sink.failed == {}, sink.failed
    assert len(sink.completed) == 12 and idle_closing.dropped == 0
    # Connections were still reused inside each burst's keep-alive window.
    assert idle_closing.answered == 12


def test_connections_idle_within_the_limit_are_reused(
    idle_closing: ClosingServer,
) -> None:
    url = idle_closing.start()
    sink = _rounds(url, pause_s=0.05)
    assert sink.failed == {} and len(sink.completed) == 12
    assert idle_closing.connections <= 4  # no new connection per request


def test_a_server_dropping_every_kept_alive_connection_loses_no_request() -> None:
    server = ClosingServer(idle_s=0.0)
    url = server.start()
    try:
        sink = _rounds(url, pause_s=0.05)
    finally:
        server.stop()
    assert sink.failed == {}, sink.failed
    # Each of the 4 requests of the second burst came on a dropped connection
    # and was sent again on a new one: the server answered all 12.
    assert len(sink.completed) == 12
    assert server.dropped == 4 and server.answered == 12


_PARTS = {
    "a status line, then a clean close": b"HTTP/1.1 200 OK\r\n",
    "headers and part of the body": (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b'Content-Length: 80\r\n\r\n{"choi'
    ),
}


@pytest.mark.parametrize("partial", _PARTS.values(), ids=list(_PARTS))
def test_a_request_whose_answer_began_is_never_sent_again(partial: bytes) -> None:
    server = ClosingServer(idle_s=0.0, partial=partial)
    url = server.start()
    try:
        sink = _rounds(url, pause_s=0.05)
    finally:
        server.stop()
    # The second burst's 4 requests were read and part-answered: they fail
    # once each, none is sent twice (the server saw 12 requests, not 16).
    assert len(sink.failed) == 4 and len(sink.completed) == 8
    assert server.received == 12 and server.dropped == 4


def test_a_request_lost_on_a_new_connection_is_not_sent_again() -> None:
    server = ClosingServer(idle_s=None)
    url = server.start()
    prompts = SyntheticPrompts(8, input_tokens=4, output_tokens=2)
    sink = RecordingSink()
    try:
        with OpenAIHttpSUT(
            OpenAIConfig(url=url, model="m", stream=False), prompts
        ) as sut:
            sut.issue_query(_batch(4, 0), sink)
            assert sink.wait(4, timeout_s=20)
    finally:
        server.stop()
    # The reason stays today's: no resend on a connection opened for the request.
    assert len(sink.failed) == 4 and server.received == 4
    assert all("connection" in r for r in sink.failed.values()), sink.failed
