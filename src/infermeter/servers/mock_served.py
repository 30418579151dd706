"""The mock's own per-request log: when each request came in and its answer went out.

Server-side timestamps (``time.monotonic_ns``) of every completion request: when
its body was read, when the first token chunk was written and when the last byte
was, how many tokens it sent, and the CRC-32 of its prompt's words (joined by
single spaces), so a client's own record of a request can be matched to the
server's where every prompt is distinct. A client's TTFT and TPOT can be set against
them (``benchmarks/client/endpoints_engines.py``); the server's TTFT is lower
than any client's by the network and the client's parsing. Five ``array``
columns, not a dict per request, so logging stays cheaper than the client the
mock measures; ``GET /mock/requests`` returns them, ``serve-mock
--request-log FILE`` writes them on exit.
"""

from __future__ import annotations

import json
import time
import zlib
from array import array
from pathlib import Path
from typing import Any

from aiohttp import web

CAPACITY = 1 << 22  # 4M requests, 128 MiB of columns; later requests are counted
UNSET = -1  # a stamp not taken (a failed request, or no first token)


class Stamp:
    """One request's place in the log; the handler stamps through it."""

    __slots__ = ("_log", "_slot")

    def __init__(self, log: ServedLog, slot: int) -> None:
        self._log = log
        self._slot = slot

    def first_byte(self) -> None:
        """The first token chunk has been written."""
        if self._slot >= 0:
            self._log.first_ns[self._slot] = time.monotonic_ns()

    def prompt(self, words: tuple[str, ...]) -> None:
        """The request's prompt words (parsed): their CRC-32 tags its row."""
        if self._slot >= 0:
            self._log.prompt_crc[self._slot] = prompt_crc(words)

    def done(self, tokens: int) -> None:
        """The last byte has been written: ``tokens`` were sent."""
        if self._slot < 0:
            return
        now = time.monotonic_ns()
        if self._log.first_ns[self._slot] == UNSET:
            self._log.first_ns[self._slot] = now  # one write for the whole answer
        self._log.last_ns[self._slot] = now
        self._log.tokens[self._slot] = tokens


class ServedLog:
    """Columns of received / first-byte / last-byte times (ns) and tokens sent."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.received_ns = array("q")
        self.first_ns = array("q")
        self.last_ns = array("q")
        self.tokens = array("q")
        self.prompt_crc = array("q")
        self.dropped = 0

    def receive(self) -> Stamp:
        """A request's body has been read; its stamp for the rest."""
        if len(self.received_ns) >= self.capacity:
            self.dropped += 1
            return Stamp(self, -1)
        self.received_ns.append(time.monotonic_ns())
        self.first_ns.append(UNSET)
        self.last_ns.append(UNSET)
        self.tokens.append(0)
        self.prompt_crc.append(UNSET)
        return Stamp(self, len(self.received_ns) - 1)

    def as_json(self) -> dict[str, Any]:
        completed = sum(1 for t in self.last_ns if t != UNSET)
        return {
            "clock": "monotonic_ns",
            "requests": len(self.received_ns),
            "completed": completed,
            "dropped": self.dropped,
            "unset": UNSET,
            "received_ns": self.received_ns.tolist(),
            "first_byte_ns": self.first_ns.tolist(),
            "last_byte_ns": self.last_ns.tolist(),
            "tokens": self.tokens.tolist(),
            "prompt_crc32": self.prompt_crc.tolist(),
        }

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.as_json(), separators=(",", ":")) + "\n")

    async def handler(self, request: web.Request) -> web.Response:
        return web.json_response(self.as_json())


def prompt_crc(words: tuple[str, ...] | list[str]) -> int:
    """What the log keeps of a prompt: CRC-32 of its words joined by one space."""
    return zlib.crc32(" ".join(words).encode())


def served_latencies(log: dict[str, Any]) -> tuple[list[float], list[float]]:
    """Server-side TTFT and TPOT (seconds) of each completed request of a log
    (``as_json``'s form); TPOT only of answers with two tokens or more."""
    ttft: list[float] = []
    tpot: list[float] = []
    rows = zip(
        log["received_ns"],
        log["first_byte_ns"],
        log["last_byte_ns"],
        log["tokens"],
        strict=True,
    )
    for received, first, last, tokens in rows:
        if last == UNSET:
            continue
        ttft.append((first - received) / 1e9)
        if tokens > 1:
            tpot.append((last - first) / 1e9 / (tokens - 1))
    return ttft, tpot
