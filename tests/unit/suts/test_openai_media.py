"""Multimodal request bodies and answers, checked byte by byte (no network)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from infermeter.errors import ConfigError, SUTProtocolError
from infermeter.loadgen.settings import Scenario
from infermeter.servers.media_checks import parse_multipart
from infermeter.suts.media_exchange import (
    MediaOutcome,
    TranscriptStream,
    _generated,
    _transcript,
    response_bytes,
)
from infermeter.suts.openai_media import (
    multipart,
    multipart_content_type,
    with_media_api,
)
from infermeter.suts.openai_request import OpenAIConfig, build_body
from infermeter.suts.prompts import Prompt
from infermeter.suts.registry import SutContext
from infermeter.testing import ManualClock
from infermeter.workloads.datasets.media_files import MediaFile, png_bytes, wav_bytes

PNG = png_bytes(np.zeros((2, 3, 3), dtype=np.uint8))
WAV = wav_bytes(np.zeros(1600, dtype=np.int16))
IMAGE = MediaFile(PNG, "image/png", "a.png")
AUDIO = MediaFile(WAV, "audio/wav", 'clip "1".wav')


def _config(api: str, **kw: object) -> OpenAIConfig:
    return OpenAIConfig(url="http://h:1/v1", model="m", api=api, **kw)  # type: ignore[arg-type]


def _form(body: bytes) -> dict[str, str | bytes]:
    fields = parse_multipart(body, multipart_content_type(body))
    return {k: (f.data if f.filename else f.text) for k, f in fields.items()}


def test_chat_image_parts_carry_the_exact_bytes_as_a_data_url() -> None:
    body = json.loads(
        build_body(_config("chat"), Prompt(text="What is it?", media=[IMAGE]))
    )
    (message,) = body["messages"]
    text, image = message["content"]
    assert text == {"type": "text", "text": "What is it?"}
    assert image["type"] == "image_url"
    head, payload = image["image_url"]["url"].split(",")
    assert head == "data:image/png;base64"
    assert base64.b64decode(payload) == PNG
    assert body["stream"] is True and body["model"] == "m"


def test_media_go_on_the_last_user_turn_and_audio_as_input_audio() -> None:
    messages = [
        {"role": "system", "content": "Be short."},
        {"role": "user", "content": "Listen."},
    ]
    body = json.loads(
        build_body(_config("chat"), Prompt(messages=messages, media=[AUDIO]))
    )
    system, user = body["messages"]
    assert system == {"role": "system", "content": "Be short."}
    text, audio = user["content"]
    assert audio["input_audio"]["format"] == "wav"
    assert base64.b64decode(audio["input_audio"]["data"]) == WAV
    assert text == {"type": "text", "text": "Listen."}


def test_text_chat_bodies_are_unchanged() -> None:
    body = json.loads(build_body(_config("chat"), Prompt(text="hi", max_tokens=3)))
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_transcription_upload_fields() -> None:
    config = _config("transcriptions", extra_body={"language": "en"})
    body = build_body(config, Prompt(media=[AUDIO]))
    assert multipart_content_type(body).startswith("multipart/form-data; boundary=")
    assert _form(body) == {
        "model": "m",
        "response_format": "json",
        "temperature": "0.0",
        "stream": "true",
        "stream_include_usage": "true",
        "language": "en",
        "file": WAV,
    }
    fields = parse_multipart(body, multipart_content_type(body))
    assert fields["file"].filename == "clip %221%22.wav"
    assert fields["file"].content_type == "audio/wav"


def test_unstreamed_transcription_with_a_token_cap() -> None:
    config = _config(
        "transcriptions", stream=False, max_tokens=50, response_format="text"
    )
    form = _form(build_body(config, Prompt(media=[AUDIO])))
    assert "stream" not in form
    assert form["max_completion_tokens"] == "50" and form["response_format"] == "text"


def test_transcription_needs_audio() -> None:
    with pytest.raises(ConfigError, match="needs an audio file per sample"):
        build_body(_config("transcriptions"), Prompt(text="no audio"))


def test_image_generation_body() -> None:
    config = _config("images", size="512x512", extra_body={"num_inference_steps": 20})
    body = json.loads(build_body(config, Prompt(text="a red cube")))
    assert body == {
        "model": "m",
        "prompt": "a red cube",
        "n": 1,
        "response_format": "b64_json",
        "size": "512x512",
        "num_inference_steps": 20,
    }


@pytest.mark.parametrize("form", ["multipart", "json"])
def test_video_body_in_both_forms(form: str) -> None:
    config = _config("videos", video_form=form, extra_body={"seconds": 4})
    body = build_body(config, Prompt(text="a drone flight"))
    fields = json.loads(body) if form == "json" else _form(body)
    expected_seconds = 4 if form == "json" else "4"
    assert fields == {
        "model": "m",
        "prompt": "a drone flight",
        "seconds": expected_seconds,
    }


def test_generation_needs_a_text_prompt() -> None:
    with pytest.raises(ConfigError, match="needs a text prompt"):
        build_body(_config("images"), Prompt(media=[IMAGE]))


@pytest.mark.parametrize(
    ("api", "path"),
    [
        ("transcriptions", "/v1/audio/transcriptions"),
        ("images", "/v1/images/generations"),
        ("videos", "/v1/videos"),
        ("chat", "/v1/chat/completions"),
    ],
)
def test_endpoints(api: str, path: str) -> None:
    assert _config(api).endpoint == "http://h:1" + path
    full = OpenAIConfig(url="http://h:1" + path, model="m", api=api)
    assert full.endpoint == "http://h:1" + path


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"api": "chat", "response_format": "json"}, "applies to the transcriptions"),
        ({"api": "images", "response_format": "png"}, "use one of b64_json, url"),
        ({"api": "videos", "video_form": "xml"}, "video_form='xml'"),
        ({"api": "videos", "poll_interval_s": 0.0}, "poll_interval must be > 0"),
        ({"api": "speech"}, "Unknown API 'speech'"),
    ],
)
def test_bad_media_settings(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OpenAIConfig(url="http://h:1/v1", model="m", **kw).validate()  # type: ignore[arg-type]


def test_multipart_boundary_never_occurs_in_the_data() -> None:
    body = multipart({"a": 1}, [("file", AUDIO)])
    boundary = multipart_content_type(body).split("=", 1)[1].encode()
    assert WAV.count(boundary) == 0 and body.count(boundary) == 3
    assert body == multipart({"a": 1}, [("file", AUDIO)])  # deterministic


@pytest.mark.parametrize(
    ("benchmark", "options", "api"),
    [
        ("stable-diffusion-xl", {}, "images"),
        ("stable-diffusion-xl", {"api": "chat"}, "chat"),
        ("llama2-70b", {}, None),
        ("no-such-benchmark", {}, None),
    ],
)
def test_the_api_follows_the_benchmark(
    benchmark: str, options: dict[str, str], api: str | None
) -> None:
    context = SutContext(
        qsl=None,  # type: ignore[arg-type]
        clock=ManualClock(),
        scenario=Scenario.OFFLINE,
        benchmark=benchmark,
        options=options,
    )
    assert with_media_api(context).get("api") == api


def _sse(*events: object) -> bytes:
    return b"".join(
        b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n"
        for e in events
    )


VLLM_STREAM = _sse(
    {"object": "transcription.chunk", "choices": [{"delta": {"content": " Hello"}}]},
    {"object": "transcription.chunk", "choices": [{"delta": {"content": " world"}}]},
    {"choices": [{"delta": {}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
    b"[DONE]",
)
OPENAI_STREAM = _sse(
    {"type": "transcript.text.delta", "delta": " Hello"},
    {"type": "transcript.text.delta", "delta": " world"},
    {
        "type": "transcript.text.done",
        "text": " Hello world",
        "usage": {"output_tokens": 4},
    },
)


@pytest.mark.parametrize(("raw", "tokens"), [(VLLM_STREAM, 3), (OPENAI_STREAM, 4)])
@pytest.mark.parametrize("split", [1, 7, 10_000])
def test_transcript_streams_in_both_dialects(
    raw: bytes, tokens: int, split: int
) -> None:
    stream = TranscriptStream()
    firsts = [stream.feed(raw[i : i + split]) for i in range(0, len(raw), split)]
    assert firsts.count(True) == 1
    outcome = stream.finish()
    assert (outcome.text, outcome.fragments, outcome.usage_tokens) == (
        " Hello world",
        2,
        tokens,
    )


def test_a_cut_transcript_stream_is_a_protocol_error() -> None:
    stream = TranscriptStream()
    cut = VLLM_STREAM.index(b"\n\n") + 2  # the connection closes after one delta
    assert stream.feed(VLLM_STREAM[:cut])
    with pytest.raises(SUTProtocolError, match="ended before"):
        stream.finish()
    torn = TranscriptStream()
    torn.feed(VLLM_STREAM[:20])  # ... or in the middle of a chunk
    with pytest.raises(SUTProtocolError, match="not JSON"):
        torn.finish()


def test_transcript_bodies() -> None:
    body = json.dumps({"text": "hi there", "usage": {"output_tokens": 2}}).encode()
    assert _transcript(body, "application/json").usage_tokens == 2
    assert _transcript(b"plain words", "text/plain").text == "plain words"
    with pytest.raises(SUTProtocolError, match='no "text"'):
        _transcript(b'{"txt": "x"}', "application/json")
    with pytest.raises(SUTProtocolError, match="server error: busy"):
        _transcript(b'{"error": {"message": "busy"}}', "application/json")


def test_generated_images_keep_their_bytes_for_the_accuracy_log() -> None:
    b64 = base64.b64encode(PNG).decode()
    outcome = _generated({"data": [{"b64_json": b64}, {"b64_json": b64}]}, "images")
    assert outcome.fragments == 2 and response_bytes(outcome) == PNG
    by_url = _generated({"data": [{"url": "http://x/1.png"}]}, "images")
    assert response_bytes(by_url) == b"http://x/1.png"
    not_png = base64.b64encode(b"hello world, not a picture").decode()
    with pytest.raises(SUTProtocolError, match="not a PNG"):
        _generated({"data": [{"b64_json": not_png}]}, "images")
    with pytest.raises(SUTProtocolError, match='no "data"'):
        _generated({"data": []}, "images")
    text = MediaOutcome("words", 1, None, "stop")
    assert response_bytes(text) == b"words"
