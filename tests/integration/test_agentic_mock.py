"""serve-mock's agentic answers: reasoning first, text or tool calls, sessions logged.

The mock follows a known plan (TTFT 0.3 s, then 0.02 s a token), so TTFT is
checked against the arrival order of the deltas, not against a rate: the
first output fragment is the first reasoning delta, which comes before the
first text delta by 20 gaps.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import pytest

from infermeter.servers.mock import MockConfig, MockServer
from infermeter.servers.mock_agentic import AgenticStream
from infermeter.suts.chat_answer import ChatAnswer
from infermeter.suts.sse import SSEDecoder, parse_chunk

pytestmark = pytest.mark.integration

TTFT_S, ITL_S, REASONING, TOKENS = 0.3, 0.02, 20, 30


def _config(field: str = "reasoning_content", tools: str = "never") -> MockConfig:
    return MockConfig(
        mode="timed",
        ttft=f"const:{TTFT_S}",
        itl=f"const:{ITL_S}",
        agentic=AgenticStream(REASONING, field, tools),
    )


async def _stream(url: str, body: dict[str, Any], session_id: str) -> dict[str, Any]:
    """Send one chat request; time every delta's arrival by its kind."""
    answer, decoder = ChatAnswer(), SSEDecoder()
    arrivals: list[tuple[float, str]] = []
    async with aiohttp.ClientSession() as http:
        start = time.perf_counter()
        headers = {"X-Session-ID": session_id} if session_id else {}
        async with http.post(
            f"{url}/chat/completions", json=body, headers=headers
        ) as resp:
            first_s = None
            async for chunk in resp.content.iter_any():
                now = time.perf_counter() - start
                if answer.feed(chunk):
                    first_s = now
                for message in decoder.feed(chunk):
                    if message.data == b"[DONE]":
                        continue
                    event = parse_chunk(message.data)
                    kind = (
                        "reasoning"
                        if event.reasoning
                        else "text"
                        if event.text
                        else "tool"
                    )
                    if event.has_fragment:
                        arrivals.append((now, kind))
    outcome = answer.finish()
    return {
        "answer": answer,
        "outcome": outcome,
        "first_s": first_s,
        "arrivals": arrivals,
    }


def _body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "mock-model",
        "messages": [{"role": "user", "content": "hello there"}],
        "max_tokens": TOKENS,
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_ttft_is_the_first_reasoning_delta_and_tokens_include_reasoning(
    field: str,
) -> None:
    with MockServer(_config(field)) as url:
        got = asyncio.run(_stream(url, _body(), "s1"))
    answer: ChatAnswer = got["answer"]
    kinds = [k for _, k in got["arrivals"]]
    assert kinds == ["reasoning"] * REASONING + ["text"] * (TOKENS - REASONING)
    first_text_s = got["arrivals"][REASONING][0]
    # TTFT is the reasoning delta's time: at least the planned 0.3 s, and before
    # the first text delta (which is planned 20 gaps = 0.4 s later).
    assert TTFT_S - 0.01 <= got["first_s"] == got["arrivals"][0][0] < first_text_s
    assert answer.token_events == TOKENS and got["outcome"].usage_tokens == TOKENS
    assert answer.reasoning_text == "think " * REASONING
    assert answer.text == "tok " * (TOKENS - REASONING)


def test_a_tool_call_only_answer_has_a_ttft_and_a_token_count() -> None:
    config = MockConfig(
        mode="timed",
        ttft=f"const:{TTFT_S}",
        itl=f"const:{ITL_S}",
        agentic=AgenticStream(0, tool_calls="when-tools"),
    )
    with MockServer(config) as url:
        got = asyncio.run(_stream(url, _body(tools=[{"type": "function"}]), "s1"))
        plain = asyncio.run(_stream(url, _body(), "s1"))  # no tools: text
    answer: ChatAnswer = got["answer"]
    assert {k for _, k in got["arrivals"]} == {"tool"}
    assert got["first_s"] is not None and got["first_s"] >= TTFT_S - 0.01
    assert answer.token_events == TOKENS and answer.text == ""
    (call,) = answer.tool_calls()
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"]) == {"command": "tok " * 28 + "ls"}
    assert got["outcome"].finish_reason == "tool_calls"
    assert {k for _, k in plain["arrivals"]} == {"text"}


def test_the_session_header_is_logged_per_request() -> None:
    server = MockServer(_config())
    with server as url:

        async def both() -> None:
            await _stream(url, _body(max_tokens=2), "conv-a")
            await _stream(url, _body(max_tokens=2), "")  # no session: not logged
            await _stream(url, _body(max_tokens=2), "conv-b")

        asyncio.run(both())
        log = server.mock.requests.entries
        assert [e["session"] for e in log] == ["conv-a", "conv-b"]
        assert log[0]["roles"] == ["user"]


def test_a_non_streamed_answer_carries_reasoning_and_the_call() -> None:
    with MockServer(_config(tools="always")) as url:

        async def one() -> dict[str, Any]:
            async with aiohttp.ClientSession() as http:
                body = _body(stream=False, max_tokens=24)
                async with http.post(f"{url}/chat/completions", json=body) as resp:
                    data: dict[str, Any] = await resp.json()
                    return data

        data = asyncio.run(one())
    message = data["choices"][0]["message"]
    assert message["reasoning_content"] == "think " * REASONING
    assert json.loads(message["tool_calls"][0]["function"]["arguments"])["command"]
    assert data["usage"]["completion_tokens"] == 24
