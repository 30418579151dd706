"""The mock server's agentic answers: reasoning, then text or tool-call deltas.

With ``reasoning_tokens`` > 0 the first that many tokens of an answer stream
as reasoning deltas, named as vLLM and SGLang name them
(``reasoning_content``) or as newer OpenAI-compatible servers do
(``reasoning``). The rest is text, or, for a tool-call answer, the fragments
of one ``bash`` call (the first fragment carries the call's id and name, the
others its arguments). Every token follows the request's ``TokenPlan``, so
TTFT is the time to the first reasoning delta and a tool-call-only answer has
a TTFT and a token count like any other. A request with ``X-Session-ID``
is logged with its messages (``GET /agentic/requests``), as a session-affine
router would see it.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from infermeter.errors import ConfigError
from infermeter.servers.mock_served import Stamp
from infermeter.servers.mock_stream import DONE, SSE_HEADERS, ParsedRequest
from infermeter.servers.timing import TokenPlan
from infermeter.workloads.agentic.turns import SESSION_HEADER

REASONING_FIELDS = ("reasoning_content", "reasoning")
TOOL_MODES = ("never", "always", "when-tools")
LOGGED = 4096  # requests kept for GET /agentic/requests
THINK = "think "
TOOL_COMMAND = "ls"  # an executable inline accuracy scores


@dataclass(frozen=True, slots=True)
class AgenticStream:
    """How the mock answers agentic requests (the defaults change nothing)."""

    reasoning_tokens: int = 0
    reasoning_field: str = "reasoning_content"
    tool_calls: str = "never"

    def validate(self) -> None:
        if self.reasoning_tokens < 0:
            raise ConfigError(
                f"--reasoning-tokens {self.reasoning_tokens}: need 0 or more."
            )
        if self.reasoning_field not in REASONING_FIELDS:
            raise ConfigError(
                f"Unknown reasoning field {self.reasoning_field!r}. "
                f"Known: {', '.join(REASONING_FIELDS)}"
            )
        if self.tool_calls not in TOOL_MODES:
            raise ConfigError(
                f"Unknown tool-call mode {self.tool_calls!r}. Known: {', '.join(TOOL_MODES)}"
            )

    @property
    def active(self) -> bool:
        return self.reasoning_tokens > 0 or self.tool_calls != "never"

    def calls_tool(self, body: dict[str, Any]) -> bool:
        if self.tool_calls == "always":
            return True
        return self.tool_calls == "when-tools" and bool(body.get("tools"))


class RequestLog:
    """What the latest requests carried: session header, messages, arrival time."""

    def __init__(self) -> None:
        self.entries: deque[dict[str, Any]] = deque(maxlen=LOGGED)

    def add(self, request: web.Request, body: bytes) -> None:
        """Log a request that names its session; others cost nothing (the mock
        must stay cheaper than the client it measures)."""
        if SESSION_HEADER not in request.headers:
            return
        try:
            obj = json.loads(body)
        except ValueError:
            obj = {}
        messages = obj.get("messages") if isinstance(obj, dict) else None
        kept = [m for m in messages or () if isinstance(m, dict)]
        self.entries.append(
            {
                "session": request.headers.get(SESSION_HEADER),
                "path": request.path,
                "roles": [m.get("role") for m in kept],
                "messages": kept,
                "time_s": asyncio.get_running_loop().time(),  # time.monotonic()
            }
        )

    async def handler(self, request: web.Request) -> web.Response:
        return web.json_response(list(self.entries))


def _chunk(delta: dict[str, Any], model: str, finish: str | None = None) -> bytes:
    body = {
        "id": "mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def _tool_pieces(k: int) -> list[str]:
    """``k`` argument fragments that join to ``{"command": "ls"}``-like JSON."""
    if k == 1:
        return [json.dumps({"command": TOOL_COMMAND})]
    return ['{"command": "', *["tok "] * (k - 2), TOOL_COMMAND + '"}']


def answer_deltas(cfg: AgenticStream, n: int, tool: bool) -> list[dict[str, Any]]:
    """The ``n`` token deltas of one answer: reasoning first, then text or a call."""
    thinking = min(cfg.reasoning_tokens, n - 1 if tool else n)
    out: list[dict[str, Any]] = [{cfg.reasoning_field: THINK}] * thinking
    rest = n - thinking
    if not tool:
        return out + [{"content": "tok "}] * rest
    for i, piece in enumerate(_tool_pieces(rest)):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
        if i == 0:
            call.update(id="call_mock_0", type="function")
            call["function"]["name"] = "bash"
        out.append({"tool_calls": [call]})
    return out


def full_message(cfg: AgenticStream, n: int, tool: bool) -> dict[str, Any]:
    """The non-streamed message the same deltas add up to."""
    deltas = answer_deltas(cfg, n, tool)
    msg: dict[str, Any] = {"role": "assistant", "content": None}
    thinking = "".join(d.get(cfg.reasoning_field, "") for d in deltas)
    text = "".join(d.get("content", "") for d in deltas)
    if thinking:
        msg[cfg.reasoning_field] = thinking
    if text:
        msg["content"] = text
    if tool:
        args = "".join(
            d["tool_calls"][0]["function"]["arguments"]
            for d in deltas
            if "tool_calls" in d
        )
        msg["tool_calls"] = [
            {
                "id": "call_mock_0",
                "type": "function",
                "function": {"name": "bash", "arguments": args},
            }
        ]
    return msg


async def respond_agentic(
    request: web.Request,
    parsed: ParsedRequest,
    plan: TokenPlan,
    cfg: AgenticStream,
    *,
    model: str,
    stamp: Stamp | None = None,
) -> web.StreamResponse:
    """Answer a chat request following ``plan`` with reasoning / tool-call deltas;
    ``stamp`` gets its first and last byte."""
    body = json.loads(await request.read())
    tool = cfg.calls_tool(body)
    n = plan.n_tokens
    finish = (
        "tool_calls" if tool else ("length" if n >= parsed.mock.max_tokens else "stop")
    )
    prompt = parsed.mock.prompt_tokens
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": n,
        "total_tokens": prompt + n,
    }
    if not parsed.mock.stream:
        await asyncio.sleep(
            plan.ttft_s + (float(plan.gaps_s.sum()) if plan.gaps_s is not None else 0.0)
        )
        choice = {
            "index": 0,
            "message": full_message(cfg, n, tool),
            "finish_reason": finish,
        }
        if stamp is not None:
            stamp.done(n)
        return web.json_response(
            {"id": "mock", "object": "chat.completion", "created": 0, "model": model,
             "choices": [choice], "usage": usage}
        )  # fmt: skip
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + plan.ttft_s
    for i, delta in enumerate(answer_deltas(cfg, n, tool)):
        if i and plan.gaps_s is not None:
            deadline += float(plan.gaps_s[i - 1])
        delay = deadline - loop.time()  # absolute deadlines, as the text stream
        if delay > 0:
            await asyncio.sleep(delay)
        await response.write(_chunk(delta, model))
        if i == 0 and stamp is not None:
            stamp.first_byte()
    tail = _chunk({}, model, finish)
    if parsed.include_usage:
        tail += (
            b"data: "
            + json.dumps(
                {
                    "id": "mock",
                    "object": "chunk",
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            ).encode()
            + b"\n\n"
        )
    await response.write(tail + DONE)
    await response.write_eof()
    if stamp is not None:
        stamp.done(n)
    return response
