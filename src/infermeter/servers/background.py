"""Serving an aiohttp application from a background thread (tests, the default run).

``ThreadedServer`` owns the thread, its event loop (uvloop when installed)
and the listening socket; mock and simulated endpoints only build the app.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Protocol

from aiohttp import web


class AppBuilder(Protocol):
    """Anything that builds the aiohttp application to serve."""

    def build(self) -> web.Application:
        """A fresh application (called at every start)."""
        ...


def bind_socket(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    """A listening TCP socket (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(4096)  # listening before the port is announced: no refused connects
    return sock


# Stopping waits this long for in-flight handlers, then cuts them. aiohttp's
# own default (60 s) can elapse in full: its graceful wait races a handler that
# is just finishing, which once held a test's server restart past 30 s.
SHUTDOWN_TIMEOUT_S = 1.0


def app_runner(app: web.Application) -> web.AppRunner:
    """A runner that cancels handlers of closed connections and stops within ~1 s."""
    return web.AppRunner(
        app, handler_cancellation=True, shutdown_timeout=SHUTDOWN_TIMEOUT_S
    )


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed, else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class ThreadedServer:
    """Serve ``app`` on a background thread: ``with Server(...) as url: ...``."""

    thread_name = "infermeter-server"

    def __init__(
        self, app: AppBuilder, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL including ``/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> str:
        """Start serving; return the base URL (the real port when 0 was asked)."""
        loop = new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=loop.run_forever, name=self.thread_name, daemon=True
        )
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), loop).result(timeout=30)
        return self.url

    async def _start(self) -> None:
        self._runner = app_runner(self.app.build())
        await self._runner.setup()
        sock = bind_socket(self.host, self.port, reuse_port=False)
        self.port = int(sock.getsockname()[1])
        await web.SockSite(self._runner, sock).start()

    def stop(self) -> None:
        """Close every connection and stop the thread (the port is kept for a restart)."""
        if self._loop is None or self._runner is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(30)
        self._loop.close()
        self._loop = None
        self._runner = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
