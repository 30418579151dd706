"""One agentic turn on the wire's terms: what is sent, what came back.

The agentic load (``runs.agentic``) builds a ``TurnRequest`` per client turn
and hands it to a "send one chat turn" callable, which answers with a
``TurnAnswer``. The types live here, below both the load and the HTTP
client, so either side can name them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]
# The header that names a request's conversation, so a router can keep it on
# one replica (the reference client's default routing header).
SESSION_HEADER = "X-Session-ID"


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """One chat request of a conversation."""

    conversation_id: str  # the logical id: the dataset's, or ``<id>__repeat_<k>``
    source_id: str  # the dataset's conversation id
    repeat: int  # 1 for the first pass over the dataset
    client_turn: int  # 0-based among the conversation's client turns
    turn: int  # the dataset row's turn number
    messages: tuple[Message, ...]
    tools: tuple[Message, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    expected_tokens: int | None = None  # the dataset's answer length, in words


@dataclass(frozen=True, slots=True)
class TurnAnswer:
    """What the model answered, and how it arrived (seconds on the sender's clock)."""

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[Message, ...] = ()
    output_tokens: int = 0  # reasoning and tool-call tokens included
    reasoning_tokens: int | None = None  # when the server says
    ttft_s: float | None = None  # send -> first non-empty fragment of any kind
    token_source: str = "usage"  # a suts.token_count source: usage, delta_events ...

    def message(self) -> Message:
        """The assistant message the conversation carries into its next request."""
        msg: Message = {"role": "assistant", "content": self.content or None}
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        if self.tool_calls:
            msg["tool_calls"] = [dict(c) for c in self.tool_calls]
        return msg


SendTurn = Callable[[TurnRequest], Awaitable[TurnAnswer]]
