"""One chat answer rebuilt from its stream: text, reasoning and whole tool calls.

``sse.StreamState`` tells when the first output arrives and counts tokens;
an agentic load also needs the answer itself, to carry it into the
conversation's next request: the text, the reasoning (``reasoning_content``
or ``reasoning``) and each tool call with its id, name and arguments, joined
from their deltas by index as the OpenAI stream format sends them. Pure: no
I/O, fed whatever the socket gave.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from infermeter.errors import SUTProtocolError
from infermeter.suts.sse import DONE, SSEDecoder, parse_chunk
from infermeter.suts.token_count import DELTA_EVENTS, USAGE
from infermeter.workloads.agentic.turns import TurnAnswer


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatAnswer:
    """Accumulates one streamed (or whole) chat answer."""

    def __init__(self) -> None:
        self._decoder = SSEDecoder()
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self._calls: dict[int, _Call] = {}
        self.token_events = 0
        self.usage_tokens: int | None = None
        self.finish_reason: str | None = None
        self.fragments = 0
        self.done = False

    def feed(self, chunk: bytes) -> bool:
        """Consume stream bytes; True when they held the first output fragment."""
        first = False
        for message in self._decoder.feed(chunk):
            first = self._message(message.data) or first
        return first

    def close(self) -> None:
        """The stream ended: flush, and refuse a stream that said nothing."""
        for message in self._decoder.close():
            self._message(message.data)
        if not (self.done or self.finish_reason or self.usage_tokens is not None):
            raise SUTProtocolError("stream ended before [DONE]")

    def whole(self, body: bytes) -> None:
        """A non-streamed response body."""
        self._message(body)
        self.done = True

    def _message(self, data: bytes) -> bool:
        if data == DONE:
            self.done = True
            return False
        event = parse_chunk(data)  # raises on malformed JSON, reports errors
        if event.error is not None:
            raise SUTProtocolError(f"server error in stream: {event.error}")
        if event.completion_tokens is not None:
            self.usage_tokens = event.completion_tokens
        self.finish_reason = event.finish_reason or self.finish_reason
        self.token_events += event.token_events
        self.content.append(event.text)
        self.reasoning.append(event.reasoning)
        for part in _parts(json.loads(data)):
            self._tool_calls(part.get("tool_calls"))
        if not event.has_fragment:
            return False
        self.fragments += 1
        return self.fragments == 1

    def _tool_calls(self, calls: Any) -> None:
        for pos, call in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(call, dict):
                continue
            index = call.get("index")
            slot = self._calls.setdefault(
                index if isinstance(index, int) else pos, _Call()
            )
            if isinstance(call.get("id"), str):
                slot.id = slot.id or call["id"]
            fn = call.get("function")
            if isinstance(fn, dict):
                if isinstance(fn.get("name"), str):
                    slot.name += fn["name"]
                args = fn.get("arguments")
                if isinstance(args, str):
                    slot.arguments.append(args)
                elif isinstance(args, dict):  # a whole body may carry an object
                    slot.arguments.append(json.dumps(args))

    @property
    def text(self) -> str:
        return "".join(self.content)

    @property
    def reasoning_text(self) -> str:
        return "".join(self.reasoning)

    def tool_calls(self) -> list[dict[str, Any]]:
        """The calls as an assistant message lists them, in index order."""
        return [
            {
                "id": c.id or f"call_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": "".join(c.arguments)},
            }
            for i, c in sorted(self._calls.items())
        ]

    @property
    def output_tokens(self) -> int:
        """Usage's completion tokens when sent, else the token-bearing chunks."""
        return self.usage_tokens if self.usage_tokens is not None else self.token_events

    def turn_answer(self, ttft_s: float | None) -> TurnAnswer:
        """The answer as the agentic load carries and measures it."""
        return TurnAnswer(
            content=self.text,
            reasoning=self.reasoning_text,
            tool_calls=tuple(self.tool_calls()),
            output_tokens=self.output_tokens,
            ttft_s=ttft_s,
            token_source=USAGE if self.usage_tokens is not None else DELTA_EVENTS,
        )


def _parts(obj: Any) -> list[dict[str, Any]]:
    if not isinstance(obj, dict):
        return []
    out: list[dict[str, Any]] = []
    for choice in obj.get("choices") or ():
        if isinstance(choice, dict):
            part = choice.get("delta") or choice.get("message")
            if isinstance(part, dict):
                out.append(part)
    return out
