"""Pure parser of OpenAI-style streams: bytes -> SSE messages -> chunks -> outcome.

No I/O and no HTTP library: the HTTP SUT feeds it whatever the socket gave,
split anywhere, and asks at the end what the stream said. A chunk's JSON is
read by ``sse_chunk`` (``parse_chunk``, ``ChunkEvent``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from infermeter.errors import SUTProtocolError
from infermeter.suts.sse_chunk import ChunkEvent, clip_payload, parse_chunk

__all__ = [
    "DONE",
    "ChunkEvent",
    "FirstToken",
    "SSEDecoder",
    "SSEMessage",
    "StreamOutcome",
    "StreamState",
    "parse_body",
    "parse_chunk",
]

DONE = b"[DONE]"


class FirstToken(Protocol):
    """Who hears of an answer's first token: a run's ``CompletionSink`` (``ids``
    its samples), or an agentic turn's stopwatch."""

    def first_token(self, ids: Any, /) -> object: ...


class SSEMessage(NamedTuple):
    """One dispatched server-sent event: its type and its (joined) data lines
    (a named tuple: one per chunk, made cheaply)."""

    event: str
    data: bytes


class SSEDecoder:
    """Incremental SSE decoder (WHATWG rules): feed bytes, get whole messages.

    Lines end with LF, CRLF or CR, even when the CR and LF arrive in different
    chunks; lines starting with ``:`` are comments (keep-alives).
    """

    __slots__ = ("_buf", "_data", "_event", "_skip_lf")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self._event = ""
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        """Consume ``chunk``; return the messages it completed (often none)."""
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        if b"\r" in chunk:
            # A CR at the very end may be the first half of a CRLF.
            self._skip_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        out: list[SSEMessage] = []
        if buf.endswith(b"\n\n") and not (self._data or self._event):
            # Whole events, the usual case: a one-line "data: " event is
            # dispatched as it is, without the line-by-line rules (which give
            # the same message); any other block goes through them.
            self._buf = b""
            for block in buf[:-2].split(b"\n\n"):
                if block[:6] == b"data: " and b"\n" not in block:
                    out.append(SSEMessage("", block[6:]))
                    continue
                for line in block.split(b"\n"):
                    self._line(line, out)
                self._line(b"", out)
            return out
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        for line in lines:
            self._line(line, out)
        return out

    def plain(self, chunk: bytes) -> list[bytes] | None:
        """The data of every event in ``chunk`` when it holds nothing but whole
        one-line ``data:`` events (the usual stream, read in one C split, no
        object per event); else None, with nothing consumed (call ``feed``).

        The same messages ``feed`` would give: each line end is one of the
        two ``\n`` that close an event, so there is no other line to read.
        """
        if (
            self._buf
            or self._data
            or self._event
            or chunk[:6] != b"data: "
            or not chunk.endswith(b"\n\n")
            or b"\r" in chunk
        ):
            return None
        datas = chunk[6:-2].split(b"\n\ndata: ")
        if chunk.count(b"\n") != 2 * len(datas):
            return None
        self._skip_lf = False
        return datas

    def close(self) -> list[SSEMessage]:
        """End of stream: flush a last message even without its blank line."""
        out: list[SSEMessage] = []
        if self._buf:
            self._line(self._buf, out)
            self._buf = b""
        self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[SSEMessage]) -> None:
        if not line:
            if self._data:
                out.append(SSEMessage(self._event, b"\n".join(self._data)))
            self._data = []
            self._event = ""
            return
        if line[0] == 58:  # b":" comment / keep-alive
            return
        field, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            self._data.append(value)
        elif field == b"event":
            self._event = value.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class StreamOutcome:
    """The whole answer of one request."""

    text: str
    fragments: int  # chunks with non-empty output
    usage_tokens: int | None
    finish_reason: str | None
    token_events: int = 0  # token-bearing chunks, empty text included
    streamed: bool = True


class StreamState:
    """Accumulates one streamed response; tells when its first token arrives.

    ``feed`` returns True exactly once: on the chunk carrying the first
    non-empty content, reasoning or tool-call fragment.
    """

    __slots__ = (
        "_decoder",
        "_done",
        "_finish",
        "_keep_text",
        "_parts",
        "_usage",
        "fragments",
        "token_events",
    )

    def __init__(self, *, keep_text: bool = True) -> None:
        self._decoder = SSEDecoder()
        self._keep_text = keep_text
        self._parts: list[str] = []
        self._usage: int | None = None
        self._finish: str | None = None
        self._done = False
        self.fragments = 0
        self.token_events = 0

    def feed(self, chunk: bytes) -> bool:
        """Consume bytes; True when they held the first token. Raises on errors."""
        first = False
        datas = self._decoder.plain(chunk)
        if datas is not None:
            for data in datas:
                first = self._message(data, "") or first
            return first
        for message in self._decoder.feed(chunk):
            first = self._message(message.data, message.event) or first
        return first

    def finish(self) -> StreamOutcome:
        """The stream closed: return the outcome, or raise ``SUTProtocolError``."""
        for message in self._decoder.close():
            self._message(message.data, message.event)
        if not (self._done or self._finish or self._usage is not None):
            raise SUTProtocolError("stream ended before [DONE]")
        return StreamOutcome(
            "".join(self._parts),
            self.fragments,
            self._usage,
            self._finish,
            self.token_events,
        )

    def _message(self, data: bytes, kind: str) -> bool:
        """One event's ``data`` (``kind``: its event type, "" when none)."""
        if data == DONE:
            self._done = True
            return False
        if self._done:
            raise SUTProtocolError("data after [DONE]")
        event = parse_chunk(data)
        if event.error is not None or kind == "error":
            reason = event.error or clip_payload(data)
            raise SUTProtocolError(f"server error in stream: {reason}")
        if event.completion_tokens is not None:
            self._usage = event.completion_tokens
        if event.finish_reason:
            self._finish = event.finish_reason
        self.token_events += event.token_events
        if self._keep_text:
            self._keep(event, data)
        if not event.has_fragment:
            return False
        self.fragments += 1
        return self.fragments == 1

    def _keep(self, event: ChunkEvent, data: bytes) -> None:
        """Keep what the chunk said (only when asked: the plain path keeps nothing).

        A subclass that needs the answer's parts apart overrides this
        (``chat_answer.ChatAnswer``); ``data`` is the chunk's JSON.
        """
        self._parts.append(event.text + event.reasoning + event.tool)


def parse_body(body: bytes) -> StreamOutcome:
    """Outcome of a non-streamed response body; raises ``SUTProtocolError``."""
    event = parse_chunk(body)
    if event.error is not None:
        raise SUTProtocolError(f"server error: {event.error}")
    text = event.text + event.reasoning + event.tool
    return StreamOutcome(
        text,
        1 if event.has_fragment else 0,
        event.completion_tokens,
        event.finish_reason,
        event.token_events,
        streamed=False,
    )
