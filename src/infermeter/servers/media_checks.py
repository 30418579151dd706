"""What the mock server checks in multimodal requests; a bad one is a ``ValueError`` (a 400).

Pure functions over bytes and parsed JSON: a strict multipart/form-data parser
(RFC 7578), image and audio content parts of chat messages (data URLs decoded
and their bytes sniffed), and the fields of the transcription, image and video
requests. Each returns a plain summary the mock records (``GET /received``).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from infermeter.workloads.datasets.media_files import image_size, sniff_mime, wav_info

TRANSCRIPTION_FORMATS = ("json", "text", "verbose_json", "srt", "vtt")
IMAGE_FORMATS = ("b64_json", "url")
PATCH = 28  # the mock counts one prompt token per 28x28 patch (Qwen-VL's merge size)
MAX_SIDE = 4096
_NAME = re.compile(r'\bname="([^"]*)"')
_FILENAME = re.compile(r'\bfilename="([^"]*)"')
_SIZE = re.compile(r"^(\d+)x(\d+)$")


@dataclass(frozen=True, slots=True)
class FormField:
    """One part of a multipart body."""

    data: bytes
    filename: str | None = None
    content_type: str | None = None

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def parse_multipart(body: bytes, content_type: str) -> dict[str, FormField]:
    """The parts of a multipart/form-data body by name; ``ValueError`` when malformed."""
    kind, _, params = content_type.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        raise ValueError(
            f"expected a multipart/form-data upload, got Content-Type {kind.strip()!r}"
        )
    match = re.search(r'boundary="?([^";]+)"?', params)
    if match is None:
        raise ValueError("multipart Content-Type has no boundary")
    delimiter = b"--" + match.group(1).encode()
    closing = b"\r\n" + delimiter + b"--"
    if not body.startswith(delimiter) or closing not in body:
        raise ValueError(
            "malformed multipart body: missing opening or closing boundary"
        )
    inner = body[len(delimiter) : body.index(closing)]
    fields: dict[str, FormField] = {}
    for part in inner.split(b"\r\n" + delimiter):
        name, field = _part(part)
        fields[name] = field
    return fields


def _part(part: bytes) -> tuple[str, FormField]:
    if not part.startswith(b"\r\n"):
        raise ValueError("malformed multipart body: a boundary is not followed by CRLF")
    head, sep, data = part[2:].partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("malformed multipart body: a part has no header end")
    headers = {}
    for line in head.decode("utf-8", "replace").split("\r\n"):
        key, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"malformed multipart header line {line!r}")
        headers[key.strip().lower()] = value.strip()
    disposition = headers.get("content-disposition", "")
    name = _NAME.search(disposition)
    if not disposition.startswith("form-data") or name is None:
        raise ValueError("a multipart part has no Content-Disposition: form-data name")
    filename = _FILENAME.search(disposition)
    return name.group(1), FormField(
        data,
        filename.group(1) if filename else None,
        headers.get("content-type"),
    )


def chat_content(messages: list[Any]) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """(prompt words, media summaries) of chat messages with string or part-list content."""
    words: list[str] = []
    media: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ValueError(f"messages[{i}] is not an object")
        content = message.get("content", "")
        if isinstance(content, list):
            for j, part in enumerate(content):
                _content_part(part, f"messages[{i}].content[{j}]", words, media)
        elif content is not None:
            words += str(content).split()
    return tuple(words), media


def _content_part(
    part: Any, where: str, words: list[str], media: list[dict[str, Any]]
) -> None:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text":
        words += str(part.get("text", "")).split()
    elif kind == "image_url":
        media.append(_image_part(part.get("image_url"), where))
    elif kind == "input_audio":
        media.append(_audio_part(part.get("input_audio"), where))
    else:
        raise ValueError(
            f"{where}: unknown content part type {kind!r} "
            "(text, image_url or input_audio)"
        )


def _image_part(image: Any, where: str) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url:
        raise ValueError(f'{where}: image_url part has no "url"')
    if url.startswith(("http://", "https://")):
        return {"kind": "image", "url": url}  # the mock fetches nothing
    if not url.startswith("data:"):
        raise ValueError(f"{where}: image url must be a data: or http(s) URL")
    header, comma, payload = url[5:].partition(",")
    declared, _, encoding = header.partition(";")
    if not comma or encoding != "base64":
        raise ValueError(f"{where}: image data URL must be data:<mime>;base64,<data>")
    data = _b64(payload, where)
    found = sniff_mime(data)
    if found is None or not found.startswith("image/"):
        raise ValueError(f"{where}: image data is not a PNG, JPEG, WebP or GIF image")
    if declared.lower().replace("image/jpg", "image/jpeg") != found:
        raise ValueError(f"{where}: data URL says {declared} but the bytes are {found}")
    return _image_summary(data, found)


def _image_summary(data: bytes, mime: str) -> dict[str, Any]:
    size = image_size(data)
    summary: dict[str, Any] = {"kind": "image", "mime": mime, "bytes": len(data)}
    if size is not None:
        summary.update(width=size[0], height=size[1])
        summary["tokens"] = math.ceil(size[0] / PATCH) * math.ceil(size[1] / PATCH)
    return summary


def _audio_part(audio: Any, where: str) -> dict[str, Any]:
    if not isinstance(audio, dict) or not isinstance(audio.get("data"), str):
        raise ValueError(f'{where}: input_audio part has no "data"')
    data = _b64(audio["data"], where)
    return audio_summary(data, where)


def _b64(payload: str, where: str) -> bytes:
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: the base64 data does not decode") from None
    if not data:
        raise ValueError(f"{where}: the base64 data is empty")
    return data


def audio_summary(data: bytes, where: str) -> dict[str, Any]:
    """Type and length of an uploaded audio file; ``ValueError`` if it is not audio."""
    mime = sniff_mime(data)
    if mime is None or not mime.startswith("audio/"):
        raise ValueError(f"{where} is not audio (wav, flac, mp3 or ogg)")
    summary: dict[str, Any] = {"kind": "audio", "mime": mime, "bytes": len(data)}
    info = wav_info(data) if mime == "audio/wav" else None
    if mime == "audio/wav" and info is None:
        raise ValueError(f"{where} is a malformed WAV file")
    if info is not None:
        summary.update(channels=info[0], rate=info[1], seconds=round(info[2], 3))
    return summary


def transcription_fields(fields: dict[str, FormField]) -> dict[str, Any]:
    """The checked fields of a transcription upload."""
    upload = fields.get("file")
    if upload is None or upload.filename is None:
        raise ValueError('the upload has no "file" part with a filename')
    model = fields.get("model")
    if model is None or not model.text:
        raise ValueError('the upload has no "model" field')
    response_format = (
        fields["response_format"].text if "response_format" in fields else "json"
    )
    if response_format not in TRANSCRIPTION_FORMATS:
        raise ValueError(
            f"response_format {response_format!r}: use one of {', '.join(TRANSCRIPTION_FORMATS)}"
        )
    return {
        "model": model.text,
        "filename": upload.filename,
        "response_format": response_format,
        "stream": _flag(fields, "stream"),
        "include_usage": _flag(fields, "stream_include_usage"),
        "audio": audio_summary(upload.data, '"file"'),
    }


def _flag(fields: dict[str, FormField], name: str) -> bool:
    value = fields.get(name)
    if value is None:
        return False
    if value.text.lower() in ("true", "1"):
        return True
    if value.text.lower() in ("false", "0"):
        return False
    raise ValueError(f"{name}={value.text!r}: use true or false")


def generation_fields(obj: dict[str, Any], *, what: str) -> dict[str, Any]:
    """The checked fields of an images or videos request (JSON, or form fields as text)."""
    prompt = obj.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f'{what} request needs a non-empty "prompt"')
    size = str(obj.get("size") or ("1024x1024" if what == "images" else "1280x720"))
    match = _SIZE.match(size)
    if match is None or not all(16 <= int(v) <= MAX_SIDE for v in match.groups()):
        raise ValueError(f"size {size!r}: use WIDTHxHEIGHT, each 16 to {MAX_SIDE}")
    summary: dict[str, Any] = {
        "model": obj.get("model"),
        "prompt_words": len(prompt.split()),
        "width": int(match.group(1)),
        "height": int(match.group(2)),
        "steps": _positive(obj, "num_inference_steps", 20),
    }
    if what == "images":
        summary["n"] = _positive(obj, "n", 1, most=10)
        fmt = obj.get("response_format") or "b64_json"
        if fmt not in IMAGE_FORMATS:
            raise ValueError(f"response_format {fmt!r}: use b64_json or url")
        summary["response_format"] = fmt
    else:
        summary["seconds"] = _positive(obj, "seconds", 4, most=60)
    return summary


def _positive(obj: dict[str, Any], key: str, default: int, most: int = 1000) -> int:
    value = obj.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key}={value!r} is not an integer") from None
    if not 1 <= number <= most:
        raise ValueError(f"{key}={number} must be between 1 and {most}")
    return number


def form_as_json(fields: dict[str, FormField]) -> dict[str, Any]:
    """Text form fields as a JSON-like dict (numbers stay text; callers convert)."""
    return {name: f.text for name, f in fields.items() if f.filename is None}


def json_object(body: bytes, what: str) -> dict[str, Any]:
    """``body`` as a JSON object, or a ``ValueError`` naming the request."""
    try:
        obj = json.loads(body)
    except ValueError:
        raise ValueError(f"{what} request body is not JSON") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{what} request body is not a JSON object")
    return obj
