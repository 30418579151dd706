"""``AioChatTurn``: send one agentic turn over HTTP (aiohttp, streamed).

The interim transport of the agentic load, until the HTTP client's transport
seam carries agentic turns: one ``aiohttp`` session in the load's own event
loop, no worker processes, no retries, no API key. Each call posts the
turn's messages (and tools) to ``/chat/completions`` with the turn's
headers, reads the stream through ``ChatAnswer`` and answers a
``TurnAnswer`` whose TTFT runs from the send to the first non-empty
fragment of any kind.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from infermeter.errors import SUTProtocolError
from infermeter.suts.chat_answer import ChatAnswer
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


class AioChatTurn:
    """``async with AioChatTurn(url, model) as send: await load(send)``."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        fields: dict[str, Any] | None = None,
        expected_lengths: bool = True,
    ) -> None:
        self.url = url.rstrip("/") + "/chat/completions"
        self.model = model
        self.fields = dict(fields or {})
        # Ask for the dataset answer's length (mock and simulated servers
        # generate max_tokens tokens); off, the fields' max_tokens rules.
        self.expected_lengths = expected_lengths
        self._http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> AioChatTurn:
        limits = aiohttp.TCPConnector(limit=0)
        self._http = aiohttp.ClientSession(connector=limits)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.close()

    def body(self, req: TurnRequest) -> dict[str, Any]:
        max_tokens = req.expected_tokens if self.expected_lengths else None
        return chat_turn_body(req, self.model, self.fields, max_tokens=max_tokens)

    async def __call__(self, req: TurnRequest) -> TurnAnswer:
        assert self._http is not None, "use AioChatTurn as an async context manager"
        loop = asyncio.get_running_loop()
        answer, first = ChatAnswer(), None
        start = loop.time()
        async with self._http.post(
            self.url, json=self.body(req), headers=req.headers
        ) as resp:
            if resp.status != 200:
                text = (await resp.text())[:200]
                raise SUTProtocolError(f"HTTP {resp.status}: {text}")
            async for chunk in resp.content.iter_any():
                if answer.feed(chunk) and first is None:
                    first = loop.time() - start
        answer.close()
        return answer.turn_answer(first)
