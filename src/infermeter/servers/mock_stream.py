"""The mock server's wire side: parse a request, write a response following a plan.

Chunk bytes are built by string formatting, not ``json.dumps`` per token, so
the server stays cheaper than the client it is measuring.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from aiohttp import web

from infermeter.servers.faults import Fault, FaultConfig
from infermeter.servers.media_checks import chat_content
from infermeter.servers.mock_served import Stamp
from infermeter.servers.timing import MockRequest, TokenPlan

TOKEN = "tok "
LLAMA_CPP = "llama.cpp"
STYLES = ("openai", LLAMA_CPP)
# llama.cpp style: text without spaces, and in every 8 tokens one two-token
# character (é is two bytes; the first token ends inside it, so its chunk
# carries empty text), as llama.cpp streams a split UTF-8 character.
LLAMA_TOKEN = "tok"
SPLIT_CHAR = "é"
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
DONE = b"data: [DONE]\n\n"
MALFORMED = b"data: {this is not json\n\n"


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """A request as the mock needs it."""

    mock: MockRequest
    chat: bool
    include_usage: bool
    words: tuple[str, ...]
    style: str = "openai"
    model: str = ""
    media: tuple[dict[str, Any], ...] = ()  # image / audio parts of a chat


def parse_request(
    body: bytes, *, chat: bool, in_flight: int, style: str = "openai"
) -> ParsedRequest:
    """Parse a (chat) completions body; ``ValueError`` with a message when it is bad."""
    try:
        obj = json.loads(body)
    except ValueError:
        raise ValueError("request body is not JSON") from None
    if not isinstance(obj, dict):
        raise ValueError("request body is not a JSON object")
    words, media = _prompt_words(obj, chat=chat)
    max_tokens = obj.get("max_completion_tokens") or obj.get("max_tokens") or 16
    options = obj.get("stream_options") or {}
    mock = MockRequest(
        prompt_tokens=len(words) + sum(m.get("tokens", 0) for m in media),
        max_tokens=int(max_tokens),
        min_tokens=int(obj.get("min_tokens") or 0),
        ignore_eos=bool(obj.get("ignore_eos")),
        stream=bool(obj.get("stream")),
        in_flight=in_flight,
    )
    # llama.cpp ignores stream_options: its streams never carry usage.
    usage = bool(options.get("include_usage")) and style != LLAMA_CPP
    return ParsedRequest(
        mock, chat, usage, words, style, str(obj.get("model") or ""), tuple(media)
    )


def _prompt_words(
    obj: dict[str, Any], *, chat: bool
) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    if chat:
        messages = obj.get("messages")
        if not isinstance(messages, list):
            raise ValueError("chat request needs a 'messages' list")
        if any(
            isinstance(m, dict) and isinstance(m.get("content"), list) for m in messages
        ):
            return chat_content(messages)  # content parts: text, images, audio
        text = " ".join(_message_text(m) for m in messages if isinstance(m, dict))
        return tuple(text.split()), []
    prompt = obj.get("prompt")
    if isinstance(prompt, str):
        return tuple(prompt.split()), []
    if isinstance(prompt, list):
        return tuple(str(p) for p in prompt), []
    raise ValueError("completions request needs a 'prompt' string or token list")


def _message_text(message: dict[str, Any]) -> str:
    """What a chat template renders of a message: its text, and for an agentic
    turn its reasoning (kept with ``preserve_thinking``) and tool calls."""
    parts = [message.get("content"), message.get("reasoning_content")]
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            parts += [fn.get("name"), fn.get("arguments")]
    return " ".join(p for p in parts if isinstance(p, str))


@lru_cache(maxsize=4096)
def sse_chunk(text: str, chat: bool, model: str, finish: str | None = None) -> bytes:
    fin = "null" if finish is None else f'"{finish}"'
    if chat:
        delta = "{}" if finish else '{"content":' + json.dumps(text) + "}"
        choice = f'{{"index":0,"delta":{delta},"finish_reason":{fin}}}'
        kind = "chat.completion.chunk"
    else:
        choice = f'{{"index":0,"text":{json.dumps(text)},"finish_reason":{fin}}}'
        kind = "text_completion"
    head = f'{{"id":"mock","object":"{kind}","created":0,"model":{json.dumps(model)},'
    return f'data: {head}"choices":[{choice}]}}\n\n'.encode()


def _role_chunk(model: str) -> bytes:
    head = (
        '{"id":"mock","object":"chat.completion.chunk","created":0,'
        f'"model":{json.dumps(model)},'
    )
    choice = (
        '{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}'
    )
    return f'data: {head}"choices":[{choice}]}}\n\n'.encode()


def _usage_chunk(parsed: ParsedRequest, n: int, model: str) -> bytes:
    usage = _usage(parsed, n)
    body = {
        "id": "mock",
        "object": "chunk",
        "model": model,
        "choices": [],
        "usage": usage,
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def _usage(parsed: ParsedRequest, n: int) -> dict[str, int]:
    prompt = parsed.mock.prompt_tokens
    return {"prompt_tokens": prompt, "completion_tokens": n, "total_tokens": prompt + n}


def _token_text(parsed: ParsedRequest, i: int, echo: bool, n: int) -> str:
    if echo and parsed.words:
        return parsed.words[i % len(parsed.words)] + " "
    if parsed.style == LLAMA_CPP:
        return _llama_text(i, n)
    return TOKEN


def _llama_text(i: int, n: int) -> str:
    slot = i % 8
    if slot == 3 and i + 1 < n:
        return ""  # the first byte of a two-byte character
    if slot == 4:
        return SPLIT_CHAR
    return LLAMA_TOKEN


def stream_head(parsed: ParsedRequest, model: str) -> bytes:
    """What a stream starts with before any token (llama.cpp chat: the role)."""
    return _role_chunk(model) if parsed.chat and parsed.style == LLAMA_CPP else b""


def _finish_reason(parsed: ParsedRequest, n: int) -> str:
    return "length" if n >= parsed.mock.max_tokens else "stop"


def stream_tail(parsed: ParsedRequest, n: int, model: str) -> bytes:
    out = sse_chunk("", parsed.chat, model, _finish_reason(parsed, n))
    if parsed.include_usage:
        out += _usage_chunk(parsed, n, model)
    return out + DONE


async def respond(
    request: web.Request,
    parsed: ParsedRequest,
    plan: TokenPlan,
    *,
    fault: Fault,
    faults: FaultConfig,
    model: str,
    echo: bool,
    stamp: Stamp | None = None,
) -> web.StreamResponse:
    """Answer ``request`` following ``plan``, with ``fault`` injected; ``stamp``
    gets the first and last byte of a whole answer (none when it fails)."""
    if fault is Fault.SLOW_FIRST_BYTE:
        await asyncio.sleep(faults.slow_first_byte_s)
    n = _emitted(parsed, plan, echo)
    if not parsed.mock.stream:
        await asyncio.sleep(
            plan.ttft_s + (float(plan.gaps_s.sum()) if plan.gaps_s is not None else 0.0)
        )
        if stamp is not None:
            stamp.done(n)
        return web.json_response(full_body(parsed, n, model, echo))
    instant = plan.ttft_s <= 0 and plan.gaps_s is None
    if instant and fault in (Fault.NONE, Fault.SLOW_FIRST_BYTE):
        # One write for the whole stream: the cheapest answer (max-throughput).
        body = b"".join(
            sse_chunk(_token_text(parsed, i, echo, n), parsed.chat, model)
            for i in range(n)
        )
        if stamp is not None:
            stamp.done(n)  # handed to aiohttp in one piece
        return web.Response(
            body=stream_head(parsed, model) + body + stream_tail(parsed, n, model),
            headers=SSE_HEADERS,
        )
    return await _stream(
        request,
        parsed,
        plan,
        n,
        fault=fault,
        faults=faults,
        model=model,
        echo=echo,
        stamp=stamp,
    )


def _emitted(parsed: ParsedRequest, plan: TokenPlan, echo: bool) -> int:
    if echo and parsed.words and not parsed.mock.ignore_eos:
        return max(1, min(plan.n_tokens, len(parsed.words)))
    return plan.n_tokens


async def _stream(
    request: web.Request,
    parsed: ParsedRequest,
    plan: TokenPlan,
    n: int,
    *,
    fault: Fault,
    faults: FaultConfig,
    model: str,
    echo: bool,
    stamp: Stamp | None,
) -> web.StreamResponse:
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    head = stream_head(parsed, model)
    if head:
        await response.write(head)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + plan.ttft_s
    mid_stream = fault in (Fault.RESET, Fault.STALL, Fault.MALFORMED)
    fault_at = min(faults.after_tokens, n) if mid_stream else -1
    for i in range(n):
        if i and plan.gaps_s is not None:
            deadline += float(plan.gaps_s[i - 1])
        # Absolute deadlines: a late wake-up does not push later tokens back.
        delay = deadline - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        if i == fault_at:
            return await _inject(request, response, fault, faults)
        await response.write(
            sse_chunk(_token_text(parsed, i, echo, n), parsed.chat, model)
        )
        if i == 0 and stamp is not None:
            stamp.first_byte()
    if fault_at == n:
        return await _inject(request, response, fault, faults)
    await response.write(stream_tail(parsed, n, model))
    await response.write_eof()
    if stamp is not None:
        stamp.done(n)
    return response


async def _inject(
    request: web.Request,
    response: web.StreamResponse,
    fault: Fault,
    faults: FaultConfig,
) -> web.StreamResponse:
    if fault is Fault.MALFORMED:
        await response.write(MALFORMED + DONE)
        await response.write_eof()
        return response
    if fault is Fault.STALL:
        await asyncio.sleep(faults.stall_s)
    if request.transport is not None:
        request.transport.abort()
    raise asyncio.CancelledError  # the connection is gone; nothing more to send


def full_body(parsed: ParsedRequest, n: int, model: str, echo: bool) -> dict[str, Any]:
    text = "".join(_token_text(parsed, i, echo, n) for i in range(n))
    finish = _finish_reason(parsed, n)
    if parsed.chat:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
        }
        kind = "chat.completion"
    else:
        choice = {"index": 0, "text": text, "finish_reason": finish}
        kind = "text_completion"
    return {
        "id": "mock",
        "object": kind,
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": _usage(parsed, n),
    }
