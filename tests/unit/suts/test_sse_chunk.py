"""The fast chunk decoder says exactly what the general rules say.

``parse_chunk`` reads the plain shapes with msgspec Structs and falls back to
``_event_of`` over ``json.loads``; every chunk here, hand-picked or generated,
must give the same ``ChunkEvent`` (or the same error) both ways. The SSE
framing's shortcut for whole one-line events is held to a plain reference
parser over the same bytes split anywhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infermeter.errors import SUTProtocolError
from infermeter.suts import sse_chunk
from infermeter.suts.sse import SSEDecoder, SSEMessage, StreamState
from infermeter.suts.sse_chunk import ChunkEvent, parse_chunk


def _general(payload: bytes) -> ChunkEvent | str:
    """The general rules alone (no Structs), or the error's text. Some odd
    shapes (``"choices": 1.0``) raise TypeError there, as they always did:
    the reason is the sample's either way."""
    try:
        obj = json.loads(payload)
    except ValueError:
        return "malformed"
    if not isinstance(obj, dict):
        return "not an object"
    try:
        return sse_chunk._event_of(obj)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _fast(payload: bytes) -> ChunkEvent | str:
    try:
        return parse_chunk(payload)
    except SUTProtocolError as exc:
        return "malformed" if "malformed" in str(exc) else "not an object"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _took_fast_path(payload: bytes) -> bool:
    try:
        sse_chunk._fast_event(sse_chunk._DECODE(payload))
    except Exception:
        return False
    return True


PLAIN = [
    {"choices": [{"index": 0, "delta": {"content": "tok "}, "finish_reason": None}]},
    {"choices": [{"delta": {"role": "assistant", "content": ""}}]},
    {"choices": [{"delta": {"content": ""}, "finish_reason": "length"}]},
    {"choices": [{"delta": {"content": ""}}]},
    {"choices": [{"delta": {"reasoning_content": "hm"}}]},
    {"choices": [{"delta": {"reasoning": "", "content": "x"}}]},
    {"choices": [{"text": "a", "finish_reason": None}]},
    {"choices": [{"text": "", "finish_reason": "stop"}]},
    {"choices": [], "usage": {"completion_tokens": 32, "prompt_tokens": 4}},
    {"choices": [{"message": {"content": "whole"}}], "usage": {"completion_tokens": 1}},
    {"choices": [{"delta": None, "message": {"content": "m"}}]},
    {"choices": [{"delta": {"content": "a"}}, {"delta": {"content": "b"}}]},
    {
        "id": "x",
        "object": "chat.completion.chunk",
        "choices": [{"delta": {"content": "é"}}],
    },
]
GENERAL = [  # shapes the Structs hand over to the general rules
    {"choices": [{"delta": {}, "finish_reason": "stop"}]},
    {"choices": [{"delta": {}, "message": {"content": "m"}}]},
    {"choices": [{"delta": {"x": 1}}]},
    {"choices": [{"delta": {"tool_calls": [{"function": {"name": "f"}}]}}]},
    {"choices": [{"delta": {"content": 3}}]},
    {"choices": [{"delta": "str"}]},
    {"choices": ["x", {"text": "t"}]},
    {"choices": {}},
    {"usage": {"completion_tokens": True}},
    {"usage": {"completion_tokens": 2.0}},
    {"usage": "n/a"},
    {"error": {"message": "boom"}},
    {"error": ""},
    {"error": None, "object": "error", "message": "bad"},
    {"object": 5},
    {"choices": [{"finish_reason": 1, "text": "t"}]},
]
RAW = [b"[1, 2]", b"not json", b'{"choices": [', b"", b'{"a": NaN}', b"\xff{}",
       b'\xef\xbb\xbf{"choices": []}', b'{"choices": [{"text": "\\ud800"}]}',
       b'{"choices": [{"text": "a"}], "choices": [{"text": "b"}]}']  # fmt: skip


@pytest.mark.parametrize("obj", PLAIN, ids=range(len(PLAIN)))
def test_plain_shapes_take_the_fast_path_and_agree(obj: dict[str, Any]) -> None:
    payload = json.dumps(obj).encode()
    assert _took_fast_path(payload)
    assert _fast(payload) == _general(payload)


@pytest.mark.parametrize("obj", GENERAL, ids=range(len(GENERAL)))
def test_other_shapes_go_the_general_way(obj: dict[str, Any]) -> None:
    payload = json.dumps(obj).encode()
    assert not _took_fast_path(payload)
    assert _fast(payload) == _general(payload)


@pytest.mark.parametrize("payload", RAW, ids=range(len(RAW)))
def test_odd_bytes_agree(payload: bytes) -> None:
    assert _fast(payload) == _general(payload)


# -- generated chunks: any mix of the fields the rules read ----------------------
_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 40), st.floats(allow_nan=False),
    st.text(max_size=3), st.just(""),
)  # fmt: skip
_value = st.one_of(
    _scalar,
    st.lists(_scalar, max_size=2),
    st.dictionaries(st.text(max_size=2), _scalar, max_size=2),
)
_function = st.fixed_dictionaries({}, optional={"name": _scalar, "arguments": _scalar})
_call = st.fixed_dictionaries(
    {},
    optional={
        "index": _scalar,
        "id": _scalar,
        "function": st.one_of(_value, _function),
    },
)
_part = st.one_of(
    _value,
    st.fixed_dictionaries(
        {},
        optional={
            "content": _scalar, "reasoning_content": _scalar, "reasoning": _scalar,
            "role": _scalar, "tool_calls": st.one_of(_scalar, st.lists(_call, max_size=2)),
            "other": _scalar,
        },
    ),
)  # fmt: skip
_choice = st.one_of(
    _scalar,
    st.fixed_dictionaries(
        {},
        optional={"delta": _part, "message": _part, "text": _scalar,
                  "finish_reason": _scalar, "index": _scalar},
    ),
)  # fmt: skip
_usage = st.fixed_dictionaries({}, optional={"completion_tokens": _scalar})
_chunk = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.one_of(_value, st.lists(_choice, max_size=3)),
        "usage": st.one_of(_value, _usage),
        "error": _value, "object": st.one_of(_scalar, st.just("error")), "message": _scalar,
    },
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(_chunk)
def test_generated_chunks_agree(obj: dict[str, Any]) -> None:
    payload = json.dumps(obj).encode()
    assert _fast(payload) == _general(payload)


_text = st.one_of(st.none(), st.just(""), st.text(max_size=3))
_plain_part = st.fixed_dictionaries(
    {},
    optional={"content": _text, "reasoning_content": _text, "reasoning": _text,
              "role": st.sampled_from([None, "assistant"]), "x": st.integers()},
)  # fmt: skip
_plain_choice = st.fixed_dictionaries(
    {},
    optional={"delta": st.one_of(st.none(), _plain_part), "message": _plain_part,
              "text": _text, "finish_reason": st.sampled_from([None, "", "stop"])},
)  # fmt: skip
_plain_chunk = st.fixed_dictionaries(
    {},
    optional={"choices": st.one_of(st.none(), st.lists(_plain_choice, max_size=3)),
              "usage": st.one_of(st.none(), st.fixed_dictionaries(
                  {"completion_tokens": st.one_of(st.none(), st.integers(0, 99))}))},
)  # fmt: skip


def test_generated_plain_chunks_agree_and_mostly_take_the_fast_path() -> None:
    # The agreement would prove little if the Structs refused them all: one set of
    # examples is checked for both (two tests drew the same 200 before).
    examples: list[bytes] = []

    @settings(max_examples=200, deadline=None, database=None)
    @given(_plain_chunk)
    def agree(obj: dict[str, Any]) -> None:
        payload = json.dumps(obj).encode()
        assert _fast(payload) == _general(payload)
        examples.append(payload)

    agree()
    fast = sum(_took_fast_path(p) for p in examples)
    assert fast > len(examples) // 2, (fast, len(examples))


# -- the SSE framing's shortcut ------------------------------------------------
def _reference(stream: bytes) -> list[SSEMessage]:
    """WHATWG's rules over the whole stream at once, line by line."""
    text = stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    out: list[SSEMessage] = []
    data: list[bytes] = []
    event = ""
    for line in [*text.split(b"\n")[:-1], b""] if text else [b""]:
        if not line:
            if data:
                out.append(SSEMessage(event, b"\n".join(data)))
            data, event = [], ""
        elif line[:1] != b":":
            field, sep, value = line.partition(b":")
            value = value[1:] if sep and value[:1] == b" " else value
            if field == b"data":
                data.append(value)
            elif field == b"event":
                event = value.decode("utf-8", "replace")
    return out


def _pieces(stream: bytes, cuts: list[int]) -> list[bytes]:
    """``stream`` cut at ``cuts`` (clipped to its length)."""
    points = sorted({min(c, len(stream)) for c in cuts})
    return [
        stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)
    ]


_line = st.one_of(
    st.builds(lambda v: b"data: " + v, st.sampled_from([b"{}", b"[DONE]", b"x", b""])),
    st.sampled_from([b"", b": ping", b"event: error", b"data:x", b"id: 1", b"data"]),
)
_ending = st.sampled_from([b"\n", b"\r\n", b"\r"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_line, _ending), max_size=12),
    st.lists(st.integers(0, 200), max_size=6),
)
def test_sse_framing_split_anywhere_matches_the_reference(
    lines: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    stream = b"".join(line + end for line, end in lines)
    pieces = _pieces(stream, cuts)
    decoder = SSEDecoder()
    got = [m for piece in pieces for m in decoder.feed(piece)] + decoder.close()
    assert got == _reference(stream)


def _stream_outcome(pieces: list[bytes]) -> Any:
    state = StreamState()
    firsts = 0
    try:
        for piece in pieces:
            firsts += state.feed(piece)
        return state.finish(), firsts
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}", firsts


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_chunk, max_size=5),
    st.booleans(),
    st.lists(st.integers(0, 400), max_size=5),
)
def test_a_stream_read_split_anywhere_gives_one_outcome(
    chunks: list[dict[str, Any]], done: bool, cuts: list[int]
) -> None:
    stream = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    stream += b"data: [DONE]\n\n" if done else b""
    pieces = _pieces(stream, cuts)
    byte_by_byte = [stream[i : i + 1] for i in range(len(stream))]
    assert _stream_outcome(pieces) == _stream_outcome(byte_by_byte)
    assert _stream_outcome([stream]) == _stream_outcome(byte_by_byte)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_line, _ending), max_size=12),
    st.lists(st.integers(0, 200), max_size=6),
)
def test_plain_events_read_in_one_split_match_the_reference(
    lines: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    # StreamState asks plain() first, then feed(): together, the reference's messages.
    stream = b"".join(line + end for line, end in lines)
    pieces = _pieces(stream, cuts)
    decoder = SSEDecoder()
    got: list[SSEMessage] = []
    for piece in pieces:
        datas = decoder.plain(piece)
        got += (
            decoder.feed(piece) if datas is None else [SSEMessage("", d) for d in datas]
        )
    assert got + decoder.close() == _reference(stream)


def test_a_usual_stream_is_read_plain() -> None:
    decoder = SSEDecoder()
    assert decoder.plain(b'data: {"a": 1}\n\ndata: [DONE]\n\n') == [
        b'{"a": 1}',
        b"[DONE]",
    ]
    assert decoder.plain(b"data: x\n\n: ping\n\n") is None  # a comment: feed() reads it
    assert decoder.plain(b"data: a\ndata: b\n\n") is None  # two lines, one event
    assert decoder.plain(b"data: x\r\n\r\n") is None
    decoder.feed(b"data: part")
    assert decoder.plain(b"ial\n\n") is None  # mid-event: feed() joins it


def _old_outcome(stream: bytes) -> Any:
    """The stream as the rules before the fast paths read it: the reference
    framing, json.loads and ``_event_of`` per event, StreamState's own steps."""
    parts: list[str] = []
    usage = finish = None
    done, fragments, events = False, 0, 0
    try:
        for message in _reference(stream):
            if message.data == b"[DONE]":
                done = True
                continue
            if done:
                raise SUTProtocolError("data after [DONE]")
            event = _general(message.data)
            if isinstance(event, str):
                return event
            if event.error is not None or message.event == "error":
                raise SUTProtocolError("server error in stream")
            usage = (
                event.completion_tokens
                if event.completion_tokens is not None
                else usage
            )
            finish = event.finish_reason or finish
            events += event.token_events
            parts.append(event.text + event.reasoning + event.tool)
            fragments += event.has_fragment
        if not (done or finish or usage is not None):
            raise SUTProtocolError("stream ended before [DONE]")
    except SUTProtocolError as exc:
        return str(exc).split(":")[0]
    return "".join(parts), fragments, usage, finish, events


def _new_outcome(pieces: list[bytes]) -> Any:
    state = StreamState()
    try:
        for piece in pieces:
            state.feed(piece)
        got = state.finish()
    except SUTProtocolError as exc:
        text = str(exc)
        return "malformed" if "malformed" in text else text.split(":")[0]
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return (
        got.text,
        got.fragments,
        got.usage_tokens,
        got.finish_reason,
        got.token_events,
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(_chunk, _plain_chunk), max_size=5),
    st.booleans(),
    st.lists(st.integers(0, 400), max_size=5),
)
def test_a_stream_reads_as_the_rules_before_the_fast_paths(
    chunks: list[dict[str, Any]], done: bool, cuts: list[int]
) -> None:
    stream = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    stream += b"data: [DONE]\n\n" if done else b""
    assert _new_outcome(_pieces(stream, cuts)) == _old_outcome(stream)
