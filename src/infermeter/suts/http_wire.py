"""The HTTP client's wire: the event loop, the connection pool, a non-200 answer.

The lowest layer of the HTTP client (``suts/DESIGN.md``): everything here is
about connections, nothing about OpenAI's API. This is aiohttp's wire, on
uvloop: the exchange (``http_exchange``) posts on the session ``open_session``
makes for ``https://``, the media APIs and ``wire=aiohttp``; plain ``http://``
text goes on the lean wire (``lean_wire``), which shares the event loop,
``KEEPALIVE_S`` and the descriptor limit from here.
"""

from __future__ import annotations

import asyncio
import resource
from contextvars import ContextVar
from typing import TYPE_CHECKING

import aiohttp

if TYPE_CHECKING:
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.client_reqrep import ClientRequest
    from aiohttp.tracing import Trace

from infermeter.suts.openai_request import OpenAIConfig

# Spare descriptors over the pool's connections (the loop, pipes, log files).
FD_HEADROOM = 64

# A pooled connection idle this long is closed, not reused: servers drop idle
# keep-alive connections after a few seconds (cpp-httplib in llama-server,
# uvicorn and Node after 5 s), and a request written into one just as the
# server drops it is lost unsent ("Can not write request body"). aiohttp's own
# limit (15 s) is past theirs. Below one request per 4 s a connection, each
# request opens its own (a LAN connect: well under a millisecond).
KEEPALIVE_S = 4.0


# Connections opened so far (all tasks), and the number of the one the current
# task opened last: set by the connector only when it opens one, so a reused
# connection costs nothing here. Counts, not loop times: uvloop's clock moves
# once per loop iteration, and a task that sends its next request in the
# iteration its last one opened a connection would read the same time.
_OPENS = [0]
_OPENED: ContextVar[int] = ContextVar("infermeter_opened", default=0)


class _Connector(aiohttp.TCPConnector):
    """aiohttp's connector, noting when the current task opens a connection."""

    async def _create_connection(
        self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> ResponseHandler:
        # Set before connecting: a connect that fails is a fresh connection too.
        _OPENS[0] += 1
        _OPENED.set(_OPENS[0])
        return await super()._create_connection(req, traces, timeout)


def open_mark() -> int:
    """The connections opened so far: take it as a request starts."""
    return _OPENS[0]


def pooled_since(mark: int) -> bool:
    """True when the current task's request begun at ``mark`` (``open_mark``)
    went out on a pooled connection: it opened none since (call only on failure)."""
    return _OPENED.get() <= mark


class HttpStatusError(Exception):
    """A non-200 answer; its message is the status and the server's own words."""

    def __init__(self, status: int, body: bytes) -> None:
        text = body[:200].decode("utf-8", "replace").replace("\n", " ").strip()
        super().__init__(f"HTTP {status}: {text}" if text else f"HTTP {status}")


def new_event_loop(use_uvloop: bool) -> asyncio.AbstractEventLoop:
    """A uvloop loop when asked for and installed, else asyncio's own."""
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            return loop
    return asyncio.new_event_loop()


def open_session(config: OpenAIConfig) -> aiohttp.ClientSession:
    """The connection pool every request of one client shares (call on its loop).

    Only the connect timeout is the session's: the first-token and total limits
    are the exchange's, per request.
    """
    raise_fd_limit(config.max_connections + FD_HEADROOM)
    connector = _Connector(
        limit=config.max_connections,
        limit_per_host=0,
        ttl_dns_cache=300,
        keepalive_timeout=KEEPALIVE_S,
    )
    return _session(config, connector)


def open_fresh_session(config: OpenAIConfig) -> aiohttp.ClientSession:
    """A session that opens a new connection for every request and keeps none:
    for resending a request a pooled connection lost unread (``http_exchange``)."""
    raise_fd_limit(2 * config.max_connections + FD_HEADROOM)
    connector = aiohttp.TCPConnector(
        limit=config.max_connections, limit_per_host=0, force_close=True
    )
    return _session(config, connector)


def _session(
    config: OpenAIConfig, connector: aiohttp.TCPConnector
) -> aiohttp.ClientSession:
    connect_s = config.timeouts.connect_s
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_s or None),
        read_bufsize=config.read_bufsize,
        cookie_jar=aiohttp.DummyCookieJar(),
    )


def raise_fd_limit(wanted: int) -> None:
    # Each connection is a file descriptor; the default soft limit is often 1024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
