"""ChatAnswer: an agentic answer rebuilt from stream bytes split anywhere,
counted by the same named sources as any sample."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infermeter.errors import SUTProtocolError
from infermeter.suts.agentic_http import chat_turn_body
from infermeter.suts.chat_answer import ChatAnswer
from infermeter.suts.token_count import TokenTally, count_tokens
from infermeter.workloads.agentic.turns import TurnRequest


def _sse(*deltas: dict[str, Any], usage: int | None = None) -> bytes:
    out = b""
    for delta in deltas:
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    if usage is not None:
        tail = {"choices": [], "usage": {"completion_tokens": usage}}
        out += b"data: " + json.dumps(tail).encode() + b"\n\n"
    return out + b"data: [DONE]\n\n"


def _call(index: int, **fields: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, **fields}]}


STREAM = _sse(
    {"role": "assistant"},
    {"reasoning_content": "let me "},
    {"reasoning_content": "look"},
    _call(0, id="a", type="function", function={"name": "bash", "arguments": ""}),
    _call(1, id="b", type="function", function={"name": "bash", "arguments": '{"co'}),
    _call(0, function={"arguments": '{"command": "ls"}'}),
    _call(1, function={"arguments": 'mmand": "git diff"}'}),
    {"content": "done"},
    usage=9,
)


@pytest.mark.parametrize("cut", [1, 7, 50, len(STREAM) - 3])
def test_tool_calls_join_by_index_wherever_the_bytes_split(cut: int) -> None:
    answer = ChatAnswer()
    firsts = [answer.feed(STREAM[:cut]), answer.feed(STREAM[cut:])]
    outcome = answer.finish()
    assert firsts.count(True) == 1  # the first reasoning fragment, once
    assert answer.reasoning_text == "let me look" and answer.text == "done"
    calls = answer.tool_calls()
    assert [c["id"] for c in calls] == ["a", "b"]
    args = [json.loads(c["function"]["arguments"]) for c in calls]
    assert args == [{"command": "ls"}, {"command": "git diff"}]
    tokens, source = count_tokens(outcome, None, TokenTally())
    turn = answer.turn_answer(tokens, source, 0.25)
    assert (turn.output_tokens, turn.token_source, turn.ttft_s) == (9, "usage", 0.25)
    assert turn.message()["tool_calls"] == calls
    # the joined text a tokenizer would re-count: reasoning, tool deltas, text
    assert outcome.text == "let me lookbash" + 'bash{"co' + '{"command": "ls"}' + (
        'mmand": "git diff"}done'
    )


def test_without_usage_tokens_are_the_token_bearing_chunks() -> None:
    answer = ChatAnswer()
    answer.feed(_sse({"role": "assistant"}, {"reasoning": "r"}, {"content": "t"}))
    tally = TokenTally()
    tokens, source = count_tokens(answer.finish(), None, tally)
    turn = answer.turn_answer(tokens, source, None)
    assert (turn.output_tokens, turn.token_source) == (2, "delta_events")
    assert turn.reasoning == "r" and tally.from_delta_events == 1


def test_a_stream_cut_short_or_a_server_error_fails_as_any_stream() -> None:
    cut = ChatAnswer()
    cut.feed(b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n')
    with pytest.raises(SUTProtocolError, match="ended before"):
        cut.finish()
    error = ChatAnswer()
    with pytest.raises(SUTProtocolError, match="server error in stream: overloaded"):
        error.feed(b'data: {"error": {"message": "overloaded"}}\n\n')
    late = ChatAnswer()
    with pytest.raises(SUTProtocolError, match="data after"):
        late.feed(b"data: [DONE]\n\n" + _sse({"content": "x"}))


def test_the_turn_body_carries_messages_tools_and_the_benchmarks_fields() -> None:
    req = TurnRequest(
        "c1__repeat_2", "c1", 2, 0, 1, ({"role": "user", "content": "hi"},),
        tools=({"type": "function"},), headers={"X-Session-ID": "c1__repeat_2"},
        expected_tokens=40,
    )  # fmt: skip
    body = chat_turn_body(req, "m", {"temperature": 1.0, "max_tokens": 8192})
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["tools"] == [{"type": "function"}] and body["max_tokens"] == 8192
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert chat_turn_body(req, "m", {}, max_tokens=40)["max_tokens"] == 40
