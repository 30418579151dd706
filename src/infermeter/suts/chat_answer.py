"""One chat answer rebuilt from its stream: text, reasoning and whole tool calls.

``sse.StreamState`` reads a stream for every exchange: errors, ``[DONE]``,
usage, the first non-empty fragment, token-bearing chunks. An agentic turn
also needs the answer itself, to carry it into the conversation's next
request: the text, the reasoning (``reasoning_content`` or ``reasoning``)
and each tool call with its id, name and arguments, joined from their deltas
by index as the OpenAI stream format sends them. ``ChatAnswer`` is that
``StreamState`` with the parts kept apart; it reads nothing itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from infermeter.suts.sse import ChunkEvent, StreamState
from infermeter.workloads.agentic.turns import TurnAnswer


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatAnswer(StreamState):
    """A streamed chat answer with its text, reasoning and tool calls kept apart.

    Feed it as any ``StreamState`` (``feed``, then ``finish`` for the outcome
    that is counted); then ``turn_answer`` is what the conversation carries.
    """

    __slots__ = ("_calls", "content", "reasoning")

    def __init__(self) -> None:
        super().__init__(keep_text=True)
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self._calls: dict[int, _Call] = {}

    def _keep(self, event: ChunkEvent, data: bytes) -> None:
        super()._keep(event, data)  # the joined text, for a tokenizer's count
        self.content.append(event.text)
        self.reasoning.append(event.reasoning)
        # Only a chunk naming tool calls is read again, for their ids and indices.
        if b'"tool_calls"' in data:
            for part in _parts(json.loads(data)):
                self._tool_calls(part.get("tool_calls"))

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
                if isinstance(fn.get("arguments"), str):
                    slot.arguments.append(fn["arguments"])

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

    def turn_answer(
        self, output_tokens: int, token_source: str, ttft_s: float | None
    ) -> TurnAnswer:
        """The answer as the agentic load carries and measures it; the tokens
        are counted by ``token_count`` (the source named, as for any sample)."""
        return TurnAnswer(
            content=self.text,
            reasoning=self.reasoning_text,
            tool_calls=tuple(self.tool_calls()),
            output_tokens=output_tokens,
            ttft_s=ttft_s,
            token_source=token_source,
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
