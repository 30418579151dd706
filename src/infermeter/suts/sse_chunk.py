"""One stream chunk's JSON -> what it carried (``ChunkEvent``), fast and exact.

``parse_chunk`` reads a completions / chat-completions chunk (or a whole
non-streamed body). The rules live in ``_event_of``, over the decoded dict,
for any shape a server sends. Nearly every chunk has one of a few plain
shapes, though, and walking its dict was most of the client's CPU per
request: those are decoded by msgspec straight into typed Structs
(``_fast_event``), which yield the very same ``ChunkEvent``. Whatever the
Structs cannot say for certain (a type they do not declare, an error object,
an empty delta whose meaning hangs on falsiness, bytes msgspec refuses) goes
the general way; ``tests/unit/suts/test_sse_chunk.py`` holds both to equality.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import msgspec

from infermeter.errors import SUTProtocolError

_UNSET = msgspec.UNSET
_Str = str | None | msgspec.UnsetType


class ChunkEvent(NamedTuple):
    """What one JSON chunk (or a whole non-streamed body) carried.

    A named tuple, not a frozen dataclass: one is made per chunk, and a frozen
    dataclass's ``__init__`` (a guarded ``object.__setattr__`` per field) cost
    more than decoding the chunk.
    """

    text: str = ""
    reasoning: str = ""
    tool: str = ""
    finish_reason: str | None = None
    completion_tokens: int | None = None
    error: str | None = None
    # Choices that carried a token, even one with empty text (a token that
    # ends inside a multi-byte UTF-8 character); role-only and finish-only
    # chunks carry none.
    token_events: int = 0

    @property
    def has_fragment(self) -> bool:
        """True when the chunk carries output: content, reasoning or a tool call."""
        return bool(self.text or self.reasoning or self.tool)


def parse_chunk(payload: bytes | str) -> ChunkEvent:
    """Interpret one completions / chat-completions chunk or response body.

    Raises ``SUTProtocolError`` when the payload is not a JSON object.
    """
    try:
        return _fast_event(_DECODE(payload))
    except (msgspec.DecodeError, _Unsure):
        pass
    try:
        obj = json.loads(payload)
    except ValueError as exc:
        raise SUTProtocolError(
            f"malformed stream chunk {clip_payload(payload)!r}"
        ) from exc
    if not isinstance(obj, dict):
        raise SUTProtocolError(
            f"stream chunk is not a JSON object: {clip_payload(payload)!r}"
        )
    return _event_of(obj)


# -- the plain shapes, typed ----------------------------------------------------
class _Part(msgspec.Struct):
    """A choice's ``delta`` or ``message`` with no tool call (a list of them,
    even empty, fails the type: the general way reads it)."""

    content: _Str = _UNSET
    reasoning_content: _Str = _UNSET
    reasoning: _Str = _UNSET
    tool_calls: None = None
    role: Any = _UNSET


class _Choice(msgspec.Struct):
    finish_reason: str | None = None
    delta: _Part | None = None
    message: _Part | None = None
    text: _Str = _UNSET


class _Usage(msgspec.Struct):
    completion_tokens: int | None = None


class _Chunk(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: None = None  # an error object goes the general way
    object: str = ""


_DECODE = msgspec.json.Decoder(_Chunk).decode


class _Unsure(Exception):
    """The Structs cannot tell what the general rules would say."""


def _fast_event(chunk: _Chunk) -> ChunkEvent:
    """``_event_of``'s rules over the Structs, in the same order (one chunk)."""
    if chunk.object == "error":
        raise _Unsure
    usage = chunk.usage
    tokens = None if usage is None else usage.completion_tokens
    text = reasoning = ""
    finish: str | None = None
    events = 0
    for choice in chunk.choices or ():
        done = choice.finish_reason
        part = choice.delta if choice.delta is not None else choice.message
        carried = 0
        role_only = False
        if part is not None:
            value = part.content
            if isinstance(value, str):
                text += value
                carried = 2 if value else 1
            value = part.reasoning_content  # twice, not a loop: no tuple per chunk
            if isinstance(value, str):
                reasoning += value
                carried = 2 if value else max(carried, 1)
            value = part.reasoning
            if isinstance(value, str):
                reasoning += value
                carried = 2 if value else max(carried, 1)
            role_only = part.role is not _UNSET
            if not (carried or role_only) and _empty(part):
                raise _Unsure  # {} is falsy (the message is read), {"x": 1} is not
        else:
            value = choice.text
            if isinstance(value, str):
                text += value
                carried = 2 if value else 1
        if carried == 2 or (carried == 1 and not (done or role_only)):
            events += 1
        finish = done or finish
    return ChunkEvent(text, reasoning, "", finish, tokens, None, events)


def _empty(part: _Part) -> bool:
    """True when the part may have been ``{}`` (or held only unknown keys)."""
    return (
        part.content is _UNSET
        and part.reasoning_content is _UNSET
        and part.reasoning is _UNSET
    )


# -- the general rules, over any decoded dict -------------------------------------
def _event_of(obj: dict[str, Any]) -> ChunkEvent:
    error = _error_of(obj)
    if error is not None:
        return ChunkEvent(error=error)
    text: list[str] = []
    reasoning: list[str] = []
    tool: list[str] = []
    finish: str | None = None
    events = 0
    for choice in obj.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        done = choice.get("finish_reason")
        part = choice.get("delta") or choice.get("message")
        if isinstance(part, dict):
            carried = _collect(part, text, reasoning, tool)
            role_only = "role" in part
        else:
            value = choice.get("text")
            carried = 0
            if isinstance(value, str):
                text.append(value)
                carried = 2 if value else 1
            role_only = False
        # Empty output counts as a token unless the chunk only names the role
        # or only carries the finish reason.
        if carried == 2 or (carried == 1 and not (done or role_only)):
            events += 1
        finish = done or finish
    usage = obj.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return ChunkEvent(
        text="".join(text),
        reasoning="".join(reasoning),
        tool="".join(tool),
        finish_reason=finish,
        completion_tokens=tokens if isinstance(tokens, int) else None,
        token_events=events,
    )


def _collect(
    part: dict[str, Any], text: list[str], reasoning: list[str], tool: list[str]
) -> int:
    """Append the part's output: 0 = no output field, 1 = only empty ones, 2 = output."""
    carried = 0
    content = part.get("content")
    if isinstance(content, str):
        text.append(content)
        carried = max(carried, 2 if content else 1)
    # vLLM and DeepSeek call it reasoning_content; newer servers reasoning.
    for key in ("reasoning_content", "reasoning"):
        value = part.get(key)
        if isinstance(value, str):
            reasoning.append(value)
            carried = max(carried, 2 if value else 1)
    for call in part.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            carried = 2
            for key in ("name", "arguments"):
                value = function.get(key)
                if isinstance(value, str):
                    tool.append(value)
    return carried


def _error_of(obj: dict[str, Any]) -> str | None:
    error = obj.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "error")
    if isinstance(error, str):
        return error
    if obj.get("object") == "error":
        return str(obj.get("message") or "error")
    return None


def clip_payload(payload: bytes | str, limit: int = 60) -> str:
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    return text if len(text) <= limit else text[:limit] + "..."
