"""The lean wire: HTTP/1.1 on asyncio protocols, parsed by httptools, pooled.

The default wire of the OpenAI client for ``http://`` URLs (``suts/DESIGN.md``;
``--sut-opt wire=aiohttp`` keeps aiohttp's, which also serves ``https://`` and
the media APIs). aiohttp's per-request cost (its request and response objects,
stream reader, header multidicts, tracing hooks) was the client's ceiling on
one core; here a request is one prebuilt ``transport.write`` and its answer is
handed from ``data_received`` through httptools' callbacks straight to the
exchange's stream reader, with one future per request and nothing per chunk
but the parser's call.

Faults are exceptions the exchange words as aiohttp's were (``failure_reason``):
``WireReset`` (the connection lost before the answer ended), ``ConnectFailed``
(no connection), ``ConnectTimedOut`` and ``BadAnswer`` (not HTTP).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
from collections import deque
from collections.abc import Callable
from typing import cast
from urllib.parse import urlsplit

import httptools

# http_wire.KEEPALIVE_S, read when used: the same limit as aiohttp's pool
# (an idle pooled connection older than this is closed, not reused).
from infermeter.suts import http_wire

Feed = Callable[[bytes], None]
Key = tuple[str, int]


class WireReset(Exception):
    """The connection ended before the answer did.

    ``kind`` names the fault as aiohttp did, so reasons group across wires:
    ``ServerDisconnectedError`` before the answer's head was whole,
    ``ClientPayloadError`` in its body. ``unanswered`` is True when not a
    byte of the answer came on a reused pooled connection: the server closed
    it idle as the request came, never read it, and a resend counts no work twice.
    """

    def __init__(self, kind: str, unanswered: bool, *, silent: bool = False) -> None:
        super().__init__(kind)
        self.kind = kind
        self.unanswered = unanswered
        self.silent = silent  # not a byte of an answer came, on any connection


class ConnectFailed(OSError):
    """No connection to the server (refused, unreachable, no such host)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.errno, error.strerror or str(error))


class ConnectTimedOut(Exception):
    """No connection within the connect timeout."""


class BadAnswer(Exception):
    """The server's answer is not HTTP/1.1 as httptools reads it."""


class _Conn(asyncio.Protocol):
    """One pooled connection; one request at a time on it."""

    def __init__(self, pool: LeanPool, key: Key) -> None:
        self._pool = pool
        self.key = key
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._feed: Feed | None = None
        self._body: list[bytes] = []
        self._error: BaseException | None = None
        self.status = 0
        self._got = 0  # answer bytes come for the request in flight
        self._head = False  # the answer's head is whole
        self._framed = False  # a Content-Length or chunked body (not close-delimited)
        self.uses = 0
        self.pooled = True  # back to the pool after an answer that keeps it alive
        self.idle_since = 0.0
        self.closed = False

    # -- asyncio.Protocol -------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but are ones.
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # Requests go out whole at once; never held back for an ACK.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # bytes nobody asked for: the connection is unusable
            self.abort()
            return
        self._got += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            self._fail(self._error or BadAnswer("the answer could not be read"))
        except httptools.HttpParserError as exc:
            self._fail(BadAnswer(f"not an HTTP answer: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._pool.lost(self)
        if self._waiter is None or self._waiter.done():
            return
        if self._head and not self._framed:  # a close-delimited body ends here
            self._complete()
            return
        kind = "ClientPayloadError" if self._head else "ServerDisconnectedError"
        silent = self._got == 0
        self._fail(WireReset(kind, unanswered=silent and self.uses > 1, silent=silent))

    # -- httptools callbacks ----------------------------------------------
    def on_message_begin(self) -> None:
        if self._waiter is None:  # an answer after the answer, in the same bytes
            self._error = BadAnswer("an answer nobody asked for")
            raise self._error

    def on_header(self, name: bytes, value: bytes) -> None:
        lower = name.lower()
        if lower == b"content-length" or lower == b"transfer-encoding":
            self._framed = True

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        self._head = True
        self._pool.on_answer()

    def on_body(self, body: bytes) -> None:
        feed = self._feed
        if feed is not None and self.status == 200:
            try:
                feed(body)
            except Exception as exc:  # the reader's verdict (malformed chunk...)
                self._error = exc
                raise
        else:
            self._body.append(body)

    def on_message_complete(self) -> None:
        if self.status < 200:  # 1xx: the real answer follows
            self._head = False
            return
        self._complete()

    # -- the request --------------------------------------------------------
    def send(
        self, request: bytes, feed: Feed | None
    ) -> asyncio.Future[tuple[int, bytes]]:
        """Write ``request``; the future ends with (status, body) when the
        answer did (the body empty when ``feed`` read a 200 answer)."""
        assert self._transport is not None
        waiter = self._pool.loop.create_future()
        self._waiter = waiter
        self._feed = feed
        self._body = []
        self._error = None
        self.status = self._got = 0
        self._head = self._framed = False
        self.uses += 1
        self._transport.write(request)
        return waiter

    def abort(self) -> None:
        """Drop the connection now (a request abandoned mid-answer, a fault)."""
        self.closed = True
        if self._transport is not None:
            self._transport.abort()

    def _complete(self) -> None:
        waiter = self._waiter
        self._waiter = self._feed = None
        body = b"".join(self._body) if self._body else b""
        self._body = []
        if self.pooled and not self.closed and self._parser.should_keep_alive():
            self._pool.release(self)
        elif not self.closed:  # the answer is whole: a clean close, not a reset
            self.closed = True
            assert self._transport is not None
            self._transport.close()
        if waiter is not None and not waiter.done():
            waiter.set_result((self.status, body))

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        self._waiter = self._feed = None
        self.abort()
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


def request_head(url: str, headers: dict[str, str]) -> tuple[Key, bytes]:
    """(host, port) and the request's head up to its Content-Length value."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"the lean wire takes http:// URLs, not {url!r}")
    port = parts.port or 80
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.netloc.rpartition("@")[2]  # as written: [::1]:8000 keeps its brackets
    lines = [f"POST {target} HTTP/1.1", f"Host: {host}", "Accept: */*"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
    return (parts.hostname, port), head


class LeanPool:
    """Keep-alive connections by (host, port): reused newest first, closed
    when idle past ``KEEPALIVE_S`` (never reused then; swept by a timer);
    at most ``limit`` requests at once (more wait)."""

    def __init__(
        self, limit: int, connect_s: float, on_answer: Callable[[], object]
    ) -> None:
        http_wire.raise_fd_limit(2 * limit + http_wire.FD_HEADROOM)
        self.loop = asyncio.get_running_loop()
        self.on_answer = on_answer  # called as each answer's head is whole
        self._limit = limit
        self._connect_s = connect_s or None
        self._idle: dict[Key, list[_Conn]] = {}
        self._all: set[_Conn] = set()
        self._busy = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._sweeper: asyncio.TimerHandle | None = None
        # Request heads by (url, headers): built once, not per request.
        self._heads: dict[object, tuple[Key, bytes]] = {}

    async def post(
        self,
        url: str,
        headers: dict[str, str],
        body: bytes,
        feed: Feed | None,
        *,
        fresh: bool = False,
    ) -> tuple[int, bytes]:
        """POST ``body``; (status, body) of the answer. ``feed`` reads a 200
        answer's body as it comes (then the returned body is empty). ``fresh``
        opens a new connection, used for this request alone (as aiohttp's
        resend session did: a server that dropped a kept-alive connection as
        a request came would likely drop this one too)."""
        cache_key = (url, tuple(headers.items()))
        cached = self._heads.get(cache_key)
        if cached is None:
            cached = self._heads[cache_key] = request_head(url, headers)
        key, head = cached
        if self._busy >= self._limit:
            await self._wait_slot()
        self._busy += 1
        conn: _Conn | None = None
        try:
            conn = None if fresh else self._reuse(key)
            if conn is None:
                conn = await self._connect(key)
                conn.pooled = not fresh
            waiter = conn.send(b"%s%d\r\n\r\n%s" % (head, len(body), body), feed)
            return await waiter
        except BaseException:
            if conn is not None and conn._waiter is not None:
                conn.abort()  # abandoned mid-answer (timeout, cancel): unusable
            raise
        finally:
            self._busy -= 1
            if self._waiters:
                self._wake()

    def release(self, conn: _Conn) -> None:
        conn.idle_since = self.loop.time()
        self._idle.setdefault(conn.key, []).append(conn)
        if self._sweeper is None:
            self._sweeper = self.loop.call_at(
                conn.idle_since + http_wire.KEEPALIVE_S, self._sweep
            )

    def lost(self, conn: _Conn) -> None:
        self._all.discard(conn)  # a closed idle one is skipped when popped

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        for conn in list(self._all):
            conn.abort()
        self._all.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports' close callbacks run

    # -- internals ---------------------------------------------------------
    def _sweep(self) -> None:
        """Close the connections idle past ``KEEPALIVE_S`` (so no descriptor
        outlives a pause in the load); again when the next one would be."""
        self._sweeper = None
        now = self.loop.time()
        oldest = math.inf
        for stack in self._idle.values():
            stale = 0  # each stack is oldest first: stale ones at its bottom
            for conn in stack:
                if not conn.closed and now - conn.idle_since <= http_wire.KEEPALIVE_S:
                    oldest = min(oldest, conn.idle_since)
                    break
                conn.abort()
                stale += 1
            del stack[:stale]
        if oldest < math.inf:
            self._sweeper = self.loop.call_at(
                oldest + http_wire.KEEPALIVE_S, self._sweep
            )

    def _reuse(self, key: Key) -> _Conn | None:
        stack = self._idle.get(key)
        if not stack:
            return None
        now = self.loop.time()
        while stack:
            conn = stack.pop()
            if conn.closed:
                continue
            if now - conn.idle_since <= http_wire.KEEPALIVE_S:
                return conn
            conn.abort()  # the newest is past the limit: so is every older one
            for old in stack:
                old.abort()
            stack.clear()
        return None

    async def _connect(self, key: Key) -> _Conn:
        loop = self.loop
        try:
            async with asyncio.timeout(self._connect_s) as scope:
                _, conn = await loop.create_connection(
                    lambda: _Conn(self, key), key[0], key[1]
                )
        except TimeoutError:
            if scope.expired():
                raise ConnectTimedOut() from None
            raise
        except OSError as exc:
            raise ConnectFailed(exc) from None
        self._all.add(conn)
        return conn

    async def _wait_slot(self) -> None:
        while self._busy >= self._limit:
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled() and self._waiters:
                    self._wake()  # pass the slot on
                raise

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
