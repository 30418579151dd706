"""The mock's request checks: every malformed multimodal request is refused with its reason."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from infermeter.servers.media_checks import (
    chat_content,
    generation_fields,
    parse_multipart,
    transcription_fields,
)
from infermeter.servers.mock_stream import parse_request
from infermeter.suts.openai_media import multipart, multipart_content_type
from infermeter.workloads.datasets.media_files import MediaFile, png_bytes, wav_bytes

PNG = png_bytes(np.zeros((56, 84, 3), dtype=np.uint8))
WAV = wav_bytes(np.zeros(8000, dtype=np.int16))
CT = "multipart/form-data; boundary=XyZ"


def _url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def _image(url: object) -> list[dict[str, object]]:
    part = {"type": "image_url", "image_url": {"url": url}}
    return [{"role": "user", "content": [part, {"type": "text", "text": "what is it"}]}]


def test_a_well_formed_image_part_is_measured() -> None:
    words, media = chat_content(_image(_url(PNG)))
    assert words == ("what", "is", "it")
    assert media == [
        {
            "kind": "image",
            "mime": "image/png",
            "bytes": len(PNG),
            "width": 84,
            "height": 56,
            "tokens": 3 * 2,  # 28x28 patches
        }
    ]


def test_the_mock_counts_image_tokens_in_the_prompt() -> None:
    body = json.dumps({"messages": _image(_url(PNG)), "max_tokens": 4}).encode()
    parsed = parse_request(body, chat=True, in_flight=0)
    assert parsed.mock.prompt_tokens == 3 + 6
    assert parsed.media[0]["width"] == 84


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"type": "image_url"}, 'image_url part has no "url"'),
        ({"type": "image_url", "image_url": {}}, 'image_url part has no "url"'),
        ({"type": "image_url", "image_url": {"url": "ftp://x"}}, "data: or http"),
        (
            {"type": "image_url", "image_url": {"url": "data:image/png,abc"}},
            "data:<mime>;base64",
        ),
        (
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}},
            "does not decode",
        ),
        (
            {"type": "image_url", "image_url": {"url": _url(b"hello there")}},
            "not a PNG, JPEG",
        ),
        (
            {"type": "image_url", "image_url": {"url": _url(PNG, "image/jpeg")}},
            "says image/jpeg but the bytes are image/png",
        ),
        ({"type": "input_audio", "input_audio": {}}, 'input_audio part has no "data"'),
        (
            {"type": "input_audio", "input_audio": {"data": _url(PNG)[22:]}},
            "is not audio",
        ),
        ({"type": "video_url"}, "unknown content part type 'video_url'"),
    ],
)
def test_bad_content_parts_name_where_and_why(
    part: dict[str, object], message: str
) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "x"}, part]}]
    with pytest.raises(ValueError, match=message) as err:
        chat_content(messages)
    assert "messages[0].content[1]" in str(err.value)


def test_remote_images_are_taken_on_trust() -> None:
    _, media = chat_content(_image("https://example.com/a.png"))
    assert media == [{"kind": "image", "url": "https://example.com/a.png"}]


def test_multipart_round_trip() -> None:
    clip = MediaFile(WAV, "audio/wav", "a.wav")
    body = multipart({"model": "whisper", "stream": True}, [("file", clip)])
    fields = parse_multipart(body, multipart_content_type(body))
    summary = transcription_fields(fields)
    assert summary["audio"] == {
        "kind": "audio",
        "mime": "audio/wav",
        "bytes": len(WAV),
        "channels": 1,
        "rate": 16_000,
        "seconds": 0.5,
    }
    assert (summary["model"], summary["stream"], summary["response_format"]) == (
        "whisper",
        True,
        "json",
    )


@pytest.mark.parametrize(
    ("body", "ctype", "message"),
    [
        (b"", "application/json", "expected a multipart/form-data upload"),
        (b"", "multipart/form-data", "has no boundary"),
        (b"--XyZ\r\n\r\nx", CT, "missing opening or closing boundary"),
        (b"junk--XyZ--", CT, "missing opening or closing boundary"),
        (b"--XyZ\r\nno header end\r\n--XyZ--", CT, "no header end"),
        (b"--XyZx\r\n\r\n--XyZ--", CT, "not followed by CRLF"),
        (
            b"--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--",
            CT,
            "no Content-Disposition",
        ),
        (
            b"--XyZ\r\nbroken header\r\n\r\nx\r\n--XyZ--",
            CT,
            "malformed multipart header",
        ),
    ],
)
def test_malformed_multipart(body: bytes, ctype: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_multipart(body, ctype)


def _upload(fields: dict[str, object], files: list[tuple[str, MediaFile]]) -> dict:
    body = multipart(fields, files)
    return parse_multipart(body, multipart_content_type(body))  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("fields", "files", "message"),
    [
        ({"model": "w"}, [], 'no "file" part'),
        ({}, [("file", MediaFile(WAV, "audio/wav", "a.wav"))], 'no "model" field'),
        (
            {"model": "w"},
            [("file", MediaFile(PNG, "image/png", "a.png"))],
            "is not audio",
        ),
        (
            {"model": "w"},
            [
                (
                    "file",
                    MediaFile(b"RIFF\x00\x00\x00\x00WAVEjunk", "audio/wav", "a.wav"),
                )
            ],
            "malformed WAV",
        ),
        (
            {"model": "w", "response_format": "xml"},
            [("file", MediaFile(WAV, "audio/wav", "a.wav"))],
            "response_format 'xml'",
        ),
        (
            {"model": "w", "stream": "maybe"},
            [("file", MediaFile(WAV, "audio/wav", "a.wav"))],
            "stream='maybe'",
        ),
    ],
)
def test_bad_transcription_uploads(
    fields: dict[str, object], files: list[tuple[str, MediaFile]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        transcription_fields(_upload(fields, files))


def test_generation_fields_and_their_errors() -> None:
    summary = generation_fields(
        {"prompt": "a red cube", "size": "512x256", "n": 2}, what="images"
    )
    assert (summary["width"], summary["height"], summary["n"], summary["steps"]) == (
        512,
        256,
        2,
        20,
    )
    video = generation_fields({"prompt": "a drone", "seconds": "8"}, what="videos")
    assert (video["seconds"], video["width"], video["height"]) == (8, 1280, 720)
    for obj, message in [
        ({}, 'needs a non-empty "prompt"'),
        ({"prompt": "x", "size": "big"}, "size 'big'"),
        ({"prompt": "x", "size": "9000x10"}, "each 16 to 4096"),
        ({"prompt": "x", "n": 0}, "n=0 must be between 1 and 10"),
        ({"prompt": "x", "num_inference_steps": "many"}, "is not an integer"),
        ({"prompt": "x", "response_format": "png"}, "use b64_json or url"),
    ]:
        with pytest.raises(ValueError, match=message):
            generation_fields(obj, what="images")
