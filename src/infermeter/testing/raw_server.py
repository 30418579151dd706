"""A raw asyncio server on 127.0.0.1, port 0, in its own thread: for byte-level faults.

aiohttp's own server never misbehaves the way real servers do (a reset after
part of a status line, a kept-alive connection dropped as a request comes);
a test writes those bytes itself with an ``asyncio.Protocol`` of its own,
served here.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable


class RawServer:
    """Serves ``protocol()`` connections (counted in ``connections``);
    ``start`` returns the URL base."""

    def __init__(self, protocol: Callable[[], asyncio.Protocol]) -> None:
        self._protocol = protocol
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self.connections = 0

    def _connection(self) -> asyncio.Protocol:
        self.connections += 1
        return self._protocol()

    def start(self, path: str = "/v1") -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        make = self._loop.create_server(self._connection, sock=sock)
        self._server = asyncio.run_coroutine_threadsafe(make, self._loop).result()
        return f"http://127.0.0.1:{sock.getsockname()[1]}{path}"

    def stop(self) -> None:
        if self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)


def take_request(buffer: bytes) -> tuple[bytes, bytes] | None:
    """(the head, the bytes after the body) of the first whole request in
    ``buffer`` (a body framed by Content-Length); None until it is whole."""
    head, sep, rest = buffer.partition(b"\r\n\r\n")
    if not sep:
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if len(rest) < length:
        return None
    return head, rest[length:]
