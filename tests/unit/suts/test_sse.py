"""The SSE / chunk parser on byte fixtures, split at every point."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infermeter.errors import SUTProtocolError
from infermeter.suts.sse import (
    SSEDecoder,
    SSEMessage,
    StreamState,
    parse_body,
    parse_chunk,
)


def _chat(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


USAGE = (
    b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 7}}\n\n'
)

CHAT_STREAM = (
    b": keep-alive\n\n"
    + _chat({"role": "assistant", "content": ""})
    + _chat({"reasoning_content": "think"})
    + b":ping\r\n\r\n"
    + _chat({"content": "Hel"})
    + _chat({"content": "lo é"})  # raw UTF-8: a split may cut the character
    + _chat(
        {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}
    )
    + _chat({}, finish="stop")
    + USAGE
    + b"data: [DONE]\n\n"
)


def _run(chunks: list[bytes]) -> tuple[list[int], StreamState]:
    state = StreamState()
    firsts = [i for i, chunk in enumerate(chunks) if state.feed(chunk)]
    return firsts, state


def _expected() -> tuple[str, int]:
    state = StreamState()
    state.feed(CHAT_STREAM)
    outcome = state.finish()
    return outcome.text, outcome.fragments


def test_whole_chat_stream() -> None:
    state = StreamState()
    assert state.feed(CHAT_STREAM) is True
    outcome = state.finish()
    assert outcome.text == "thinkHello éf{}"
    assert outcome.fragments == 4  # reasoning, 2 content, 1 tool call
    assert outcome.usage_tokens == 7
    assert outcome.finish_reason == "stop"


def test_every_single_split_point() -> None:
    expected = _expected()
    for cut in range(1, len(CHAT_STREAM)):
        firsts, state = _run([CHAT_STREAM[:cut], CHAT_STREAM[cut:]])
        outcome = state.finish()
        got = (len(firsts), outcome.text, outcome.fragments, outcome.usage_tokens)
        assert got == (1, *expected, 7), f"split at byte {cut}"


@given(st.lists(st.integers(min_value=0, max_value=len(CHAT_STREAM)), max_size=40))
def test_any_set_of_splits(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(CHAT_STREAM)]
    chunks = [CHAT_STREAM[a:b] for a, b in itertools.pairwise(points)]
    firsts, state = _run([c for c in chunks if c])
    assert len(firsts) == 1
    assert (state.finish().text, state.fragments) == _expected()


def test_first_token_is_the_first_non_empty_fragment() -> None:
    state = StreamState()
    assert state.feed(_chat({"role": "assistant", "content": ""})) is False
    assert state.feed(b": keep-alive\n\n") is False
    assert state.feed(_chat({"reasoning_content": "r"})) is True
    assert state.feed(_chat({"content": "x"})) is False


def test_tool_call_delta_counts_as_first_token() -> None:
    state = StreamState()
    call = {"tool_calls": [{"index": 0, "function": {"arguments": '{"a'}}]}
    assert state.feed(_chat(call)) is True


def test_crlf_split_between_chunks_keeps_multiline_data() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\ndata: b\r\n") == []
    assert decoder.feed(b"\r\n") == [SSEMessage("", b"a\nb")]


def test_bare_cr_line_endings_and_event_field() -> None:
    decoder = SSEDecoder()
    got = decoder.feed(b"event: error\rdata:x\r\r")
    assert got == [SSEMessage("error", b"x")]


def test_close_flushes_a_last_message_without_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]") == []
    assert decoder.close() == [SSEMessage("", b"[DONE]")]


def test_completions_stream_with_usage_only_final_chunk() -> None:
    chunks = [
        b'data: {"choices": [{"text": "a", "index": 0}]}\n\n',
        b'data: {"choices": [{"text": "b", "finish_reason": "length"}]}\n\n',
        USAGE,
        b"data: [DONE]\n\n",
    ]
    firsts, state = _run(chunks)
    outcome = state.finish()
    assert firsts == [0]
    assert (outcome.text, outcome.usage_tokens, outcome.finish_reason) == (
        "ab",
        7,
        "length",
    )


def test_malformed_json_raises_protocol_error() -> None:
    state = StreamState()
    with pytest.raises(SUTProtocolError, match="malformed stream chunk"):
        state.feed(b"data: {not json\n\n")


def test_error_object_in_stream_raises() -> None:
    state = StreamState()
    with pytest.raises(SUTProtocolError, match="overloaded"):
        state.feed(b'data: {"error": {"message": "overloaded"}}\n\n')


def test_stream_cut_before_done_raises() -> None:
    state = StreamState()
    state.feed(_chat({"content": "x"}))
    with pytest.raises(SUTProtocolError, match="before \\[DONE\\]"):
        state.finish()


def test_data_after_done_raises() -> None:
    state = StreamState()
    with pytest.raises(SUTProtocolError, match="after"):
        state.feed(b"data: [DONE]\n\n" + _chat({"content": "x"}))


def test_stream_without_done_but_with_finish_reason_is_accepted() -> None:
    state = StreamState()
    state.feed(_chat({"content": "x"}, finish="stop"))
    assert state.finish().finish_reason == "stop"


def test_keep_text_false_counts_but_does_not_store() -> None:
    state = StreamState(keep_text=False)
    state.feed(CHAT_STREAM)
    outcome = state.finish()
    assert (outcome.text, outcome.fragments) == ("", 4)


def test_parse_body_chat_and_completions() -> None:
    chat = {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"completion_tokens": 2},
    }
    outcome = parse_body(json.dumps(chat).encode())
    assert (outcome.text, outcome.usage_tokens, outcome.fragments) == ("hi", 2, 1)
    comp = {"choices": [{"text": "yo"}]}
    assert parse_body(json.dumps(comp).encode()).text == "yo"


def test_parse_body_error_and_non_object() -> None:
    with pytest.raises(SUTProtocolError, match="server error: bad"):
        parse_body(b'{"object": "error", "message": "bad"}')
    with pytest.raises(SUTProtocolError, match="not a JSON object"):
        parse_chunk(b"[1, 2]")


@pytest.mark.parametrize(
    ("payload", "events"),
    [
        ('{"choices":[{"text":"a","finish_reason":null}]}', 1),
        # a token that ends inside a UTF-8 character: empty text, still a token
        ('{"choices":[{"text":"","finish_reason":null}]}', 1),
        ('{"choices":[{"delta":{"content":""},"finish_reason":null}]}', 1),
        # finish-only and role-only chunks carry no token
        ('{"choices":[{"text":"","finish_reason":"stop"}]}', 0),
        ('{"choices":[{"delta":{},"finish_reason":"length"}]}', 0),
        ('{"choices":[{"delta":{"role":"assistant","content":null}}]}', 0),
        ('{"choices":[{"delta":{"role":"assistant","content":""}}]}', 0),
        # a last token that arrives with the finish reason is one
        ('{"choices":[{"text":"z","finish_reason":"length"}]}', 1),
        ('{"choices":[{"delta":{"role":"assistant","content":"hi"}}]}', 1),
        ('{"choices":[],"usage":{"completion_tokens":5}}', 0),
    ],
)
def test_token_events_count_token_bearing_chunks(payload: str, events: int) -> None:
    assert parse_chunk(payload).token_events == events


def test_stream_outcome_counts_empty_text_tokens_but_not_the_finish_chunk() -> None:
    chunks = [
        '{"choices":[{"text":"a"}]}',
        '{"choices":[{"text":""}]}',
        '{"choices":[{"text":"\\u00e9"}]}',
        '{"choices":[{"text":"","finish_reason":"stop"}]}',
    ]
    state = StreamState()
    body = "".join(f"data: {c}\n\n" for c in chunks) + "data: [DONE]\n\n"
    state.feed(body.encode())
    outcome = state.finish()
    assert (outcome.token_events, outcome.fragments, outcome.text) == (3, 2, "aé")
    assert outcome.usage_tokens is None and outcome.streamed
