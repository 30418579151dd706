"""The max-throughput mock on a lean serving path (``serve-mock --server lean``).

A client benchmark on one core must not measure the mock: the aiohttp mock
spends 60-80 us of its CPU per streamed 32-token answer, this path under a
third of that (``benchmarks/client/mock_capacity.py``), with the same bytes.
A raw ``asyncio.Protocol`` per connection (uvloop), ``httptools`` to parse,
and each answer's bytes rendered once per (endpoint, output length, usage)
and reused. Only what max-throughput needs is served: completions and chat
(streamed or not), ``/v1/models``, ``/health``, ``/stats``, ``/metrics`` and the
per-request log ``/mock/requests`` (``mock_served``); no faults, timings,
styles, agentic answers or multimodal routes (``MockConfig.validate`` says
so). With ``chunked`` a stream goes out in chunked transfer encoding, one
chunk per event, as vLLM's do (the aiohttp mock sends a max-throughput
answer with a Content-Length)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

import httptools

from infermeter.servers.background import bind_socket, new_event_loop
from infermeter.servers.endpoint import MAX_BODY
from infermeter.servers.mock_served import ServedLog
from infermeter.servers.mock_stream import (
    TOKEN,
    ParsedRequest,
    full_body,
    parse_request,
    sse_chunk,
    stream_tail,
)
from infermeter.servers.prometheus import CONTENT_TYPE, Exporter, mock_values
from infermeter.servers.timing import InstantTiming

JSON = b"application/json; charset=utf-8"
SSE = b"text/event-stream\r\nCache-Control: no-cache"
RENDERED = 4096  # cached answers (endpoint x length x usage x prompt size)
REASONS = {
    200: b"OK",
    400: b"Bad Request",
    404: b"Not Found",
    413: b"Payload Too Large",
}
REASONS |= {405: b"Method Not Allowed"}
POST_ROUTES = {b"/v1/completions": False, b"/v1/chat/completions": True}
Send = Callable[[bytes], None]
GET_ROUTES = frozenset(
    (b"/v1/models", b"/health", b"/stats", b"/metrics", b"/mock/requests")
)


def response(status: int, content_type: bytes, body: bytes, *, close: bool) -> bytes:
    """One whole HTTP/1.1 response (a fixed length, as the aiohttp mock sends)."""
    head = b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n" % (
        status,
        REASONS[status],
        content_type,
        len(body),
    )
    return head + (b"Connection: close\r\n\r\n" if close else b"\r\n") + body


def chunked_stream(events: list[bytes]) -> bytes:
    """A 200 SSE response in chunked transfer encoding, one chunk per event (as
    vLLM streams), still written at once."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    return head % SSE + chunks + b"0\r\n\r\n"


def _error(status: int, message: str, kind: str, *, close: bool) -> bytes:
    body = {"error": {"message": message, "type": kind, "code": status}}
    return response(status, JSON, json.dumps(body).encode(), close=close)


class LeanMock:
    """The state one serving process shares across its connections."""

    def __init__(
        self,
        model: str = "mock-model",
        *,
        check_model: bool = False,
        chunked: bool = False,
    ) -> None:
        self.model = model
        self.check_model = check_model
        self.chunked = chunked  # streams: one chunk per SSE event, not one body
        self.stats: Counter[str] = Counter()
        self.served = ServedLog()
        self.connections: set[asyncio.Transport] = set()  # open ones, cut at stop
        self._timing = InstantTiming()
        self._rendered: dict[tuple[bool, bool, int, bool, int], bytes] = {}
        self._exporter = Exporter(lambda: mock_values(self.stats, 0), model)

    def answer(
        self, method: bytes, path: bytes, body: bytes, send: Send, *, close: bool
    ) -> None:
        """Send the whole response to one request."""
        path = path.split(b"?", 1)[0]
        chat = POST_ROUTES.get(path)
        if chat is not None and method == b"POST":
            self._complete(body, send, chat=chat, close=close)
        else:
            send(self._other(method, path, chat is not None, close=close))

    def _other(self, method: bytes, path: bytes, post: bool, *, close: bool) -> bytes:
        if post:
            return response(405, b"text/plain", b"405: Method Not Allowed", close=close)
        if path not in GET_ROUTES:
            return response(404, b"text/plain", b"404: Not Found", close=close)
        if method != b"GET":
            return response(405, b"text/plain", b"405: Method Not Allowed", close=close)
        if path == b"/health":
            return response(200, b"text/plain; charset=utf-8", b"ok", close=close)
        if path == b"/metrics":
            body = self._exporter.render()
            return response(200, CONTENT_TYPE.encode(), body, close=close)
        return response(200, JSON, json.dumps(self._get(path)).encode(), close=close)

    def _get(self, path: bytes) -> Any:
        if path == b"/stats":
            return dict(self.stats)
        if path == b"/mock/requests":
            return self.served.as_json()
        data = [{"id": self.model, "object": "model", "owned_by": "infermeter"}]
        return {"object": "list", "data": data}

    def _complete(self, body: bytes, send: Send, *, chat: bool, close: bool) -> None:
        self.stats["requests"] += 1
        stamp = self.served.receive()
        try:
            parsed = parse_request(body, chat=chat, in_flight=0)
        except ValueError as exc:
            self.stats["bad_request"] += 1
            send(_error(400, str(exc), "invalid_request_error", close=close))
            return
        stamp.prompt(parsed.words)
        if self.check_model and parsed.model != self.model:
            self.stats["unknown_model"] += 1
            message = f"The model `{parsed.model}` does not exist."
            send(_error(404, message, "NotFoundError", close=close))
            return
        n = self._timing.plan(parsed.mock).n_tokens
        self.stats["prompt_tokens"] += parsed.mock.prompt_tokens
        self.stats["completed"] += 1
        self.stats["tokens"] += n
        send(self._rendered_answer(parsed, n, close))
        stamp.done(n)  # first and last token: the one write just handed to the socket

    def _rendered_answer(self, parsed: ParsedRequest, n: int, close: bool) -> bytes:
        stream = parsed.mock.stream
        # Usage carries the prompt's size: part of the key only where it is sent.
        prompt = parsed.mock.prompt_tokens if parsed.include_usage or not stream else 0
        key = (parsed.chat, stream, n, parsed.include_usage, prompt)
        out = self._rendered.get(key)
        if out is None:
            if len(self._rendered) >= RENDERED:
                self._rendered.clear()
            out = self._rendered[key] = self._render(parsed, n)
        if close:  # rare: the client asked to close; the cache holds keep-alive answers
            head, _, rest = out.partition(b"\r\n\r\n")
            out = head + b"\r\nConnection: close\r\n\r\n" + rest
        return out

    def _render(self, parsed: ParsedRequest, n: int) -> bytes:
        if not parsed.mock.stream:
            body = json.dumps(full_body(parsed, n, self.model, echo=False)).encode()
            return response(200, JSON, body, close=False)
        token = sse_chunk(TOKEN, parsed.chat, self.model)
        tail = stream_tail(parsed, n, self.model)
        if self.chunked:
            events = [e + b"\n\n" for e in tail.split(b"\n\n") if e]
            return chunked_stream([token] * n + events)
        return response(200, SSE, token * n + tail, close=False)


class _TooLarge(Exception):
    """A request body over ``MAX_BODY``: answered 413, the connection closed."""


class _Connection(asyncio.Protocol):
    """One client connection: parse with httptools, answer each request in order.

    Answers are instant, so pipelined requests are answered in the order they
    came, each as soon as its last byte is parsed.
    """

    def __init__(self, mock: LeanMock) -> None:
        self.mock = mock
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.body: list[bytes] = []
        self.size = 0
        self.closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self.transport = cast(asyncio.Transport, transport)
        self.mock.connections.add(self.transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # answers are one write each: send them at once
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.mock.connections.discard(self.transport)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if not isinstance(exc.__context__, _TooLarge):
                raise  # a fault of ours, not of the request: logged by the loop
            self._refuse(
                response(413, b"text/plain", b"413: Payload Too Large", close=True)
            )
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):
            self._refuse(
                _error(
                    400, "malformed HTTP request", "invalid_request_error", close=True
                )
            )

    def _refuse(self, answer: bytes) -> None:
        if not self.closing:
            self._write(answer)
            self._close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url = b""
        self.body = []
        self.size = 0

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        lower = name.lower()
        if lower == b"authorization":  # never logged, only counted
            self.mock.stats["with_authorization"] += 1
        elif lower == b"expect" and value.lower() == b"100-continue":
            assert self.transport is not None
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size > MAX_BODY:
            raise _TooLarge
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.closing:
            return
        close = not self.parser.should_keep_alive()
        method = self.parser.get_method()
        self.mock.answer(
            method, self.url, b"".join(self.body), self._write, close=close
        )
        if close:
            self._close()

    def _write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def _close(self) -> None:
        assert self.transport is not None
        self.closing = True
        self.transport.close()

    # a client that does not read: stop reading its requests until it does
    def pause_writing(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()


async def _stop(mock: LeanMock, server: asyncio.Server) -> None:
    server.close()
    for transport in list(mock.connections):
        transport.abort()
    await server.wait_closed()


async def _start(mock: LeanMock, sock: socket.socket) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _Connection(mock), sock=sock)


def run_lean(mock: LeanMock, sock: socket.socket) -> None:
    """Serve on ``sock`` in the foreground until SIGINT or SIGTERM."""
    loop = new_event_loop()
    stop = threading.Event()
    # Python-level handlers, looked at every 0.1 s: uvloop's add_signal_handler
    # missed a SIGTERM about one time in three here (the process served on).
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the first answer
        signal.signal(sig, lambda *_: stop.set())
    try:
        server = loop.run_until_complete(_start(mock, sock))
        loop.run_until_complete(_until(stop))
        loop.run_until_complete(_stop(mock, server))
    finally:
        loop.close()


async def _until(stop: threading.Event) -> None:
    while not stop.is_set():
        await asyncio.sleep(0.1)


class LeanMockServer:
    """The lean mock on a background thread: ``with LeanMockServer() as url: ...``."""

    def __init__(
        self, mock: LeanMock | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.mock = mock or LeanMock()
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> str:
        self._loop = loop = new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, daemon=True)
        self._thread.start()
        sock = bind_socket(self.host, self.port, reuse_port=False)
        self.port = int(sock.getsockname()[1])
        start = asyncio.run_coroutine_threadsafe(_start(self.mock, sock), loop)
        self._server = start.result(timeout=30)
        return self.url

    def stop(self) -> None:
        if self._loop is None or self._server is None:
            return
        stopped = asyncio.run_coroutine_threadsafe(
            _stop(self.mock, self._server), self._loop
        )
        stopped.result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(30)
        self._loop.close()
        self._loop = self._server = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
