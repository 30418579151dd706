"""``ChatTurns``: agentic turns sent through the HTTP client's exchange.

A thin adapter between the agentic load (``runs.agentic``, which calls a
``SendTurn``) and ``http_exchange.Exchange``, the core every request of the
HTTP client goes through: the turn's chat body (its messages, its tools, a
benchmark's fields) and headers (the API key's, the turn's ``X-Session-ID``)
are posted on the wire's connection pool under the config's timeouts; the
stream is read by ``ChatAnswer`` (a ``StreamState`` keeping the answer's
parts); TTFT is the time to its first non-empty fragment of any kind, tokens
are counted from the same named sources as any sample's. A failed turn raises
``SUTError`` whose text is the reason the openai SUT gives a failed sample
(ids masked, the key redacted); the load records it and ends the
conversation.

Turns run on the load's own event loop, in this process: the multi-process
and Ray transports carry run samples, not conversations.
"""

from __future__ import annotations

import json
import time
from typing import Any

from infermeter.clock import MonotonicClock
from infermeter.errors import SUTError
from infermeter.suts.chat_answer import ChatAnswer
from infermeter.suts.http_exchange import Exchange
from infermeter.suts.openai_request import ApiKey, OpenAIConfig
from infermeter.suts.reachability import Reachability
from infermeter.workloads.agentic.turns import TurnAnswer, TurnRequest


def chat_turn_body(
    req: TurnRequest,
    model: str,
    fields: dict[str, Any],
    *,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The streamed chat body of one turn: its messages, its tools, ``fields``
    (a benchmark's sampling), usage asked for; ``max_tokens`` overrides."""
    body: dict[str, Any] = {
        "model": model,
        "messages": list(req.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
        **fields,
    }
    if req.tools:
        body["tools"] = list(req.tools)
    if max_tokens:
        body["max_tokens"] = max_tokens
    return body


class _Stopwatch:
    """Hears of a turn's first token (as a run's sink would) and times it."""

    __slots__ = ("start", "ttft_s")

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.ttft_s: float | None = None

    def first_token(self, ids: Any, /) -> None:
        self.ttft_s = time.perf_counter() - self.start


class ChatTurns:
    """``async with ChatTurns(config) as send: await AgenticLoad(..., send).run()``.

    ``config`` is the HTTP client's (``api`` chat, the endpoint, timeouts,
    connections, tokenizer); ``fields`` go into every body (a benchmark's
    sampling); ``expected_lengths`` asks for the dataset answer's length
    (mock and simulated servers generate ``max_tokens`` tokens).
    """

    def __init__(
        self,
        config: OpenAIConfig,
        *,
        fields: dict[str, Any] | None = None,
        expected_lengths: bool = True,
        api_key: ApiKey | None = None,
    ) -> None:
        config.validate()
        reach = Reachability(config.unreachable_after_s, MonotonicClock())
        self.exchange = Exchange(config, reach, api_key=api_key)
        self.url = config.endpoint
        self.fields = dict(fields or {})
        self.expected_lengths = expected_lengths

    async def __aenter__(self) -> ChatTurns:
        await self.exchange.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.exchange.close()

    def body(self, req: TurnRequest) -> dict[str, Any]:
        max_tokens = req.expected_tokens if self.expected_lengths else None
        model = self.exchange.config.model
        return chat_turn_body(req, model, self.fields, max_tokens=max_tokens)

    async def __call__(self, req: TurnRequest) -> TurnAnswer:
        body = json.dumps(self.body(req)).encode()
        headers = {**self.exchange.headers, **req.headers}
        answer, watch = ChatAnswer(), _Stopwatch()
        try:
            outcome = await self.exchange.send(
                self.url, body, answer, watch, None, headers
            )
        except Exception as exc:  # the turn's, with the sample's reason text
            raise SUTError(self.exchange.reason(exc)) from None
        tokens, source = self.exchange.count(outcome)
        return answer.turn_answer(tokens, source, watch.ttft_s)

    def counts(self) -> dict[str, Any]:
        """Completed and failed turns, the commonest reasons, the token sources."""
        return self.exchange.counts()
