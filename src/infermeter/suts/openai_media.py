"""The multimodal OpenAI APIs: their names, paths and request shapes (chat parts, uploads).

* chat with media: the text part, then each image as an ``image_url`` part
  holding a ``data:<mime>;base64,`` URL and each audio clip as an
  ``input_audio`` part (the order of MLPerf's qwen3-vl reference; vLLM, SGLang,
  TensorRT-LLM and OpenAI read this shape).
* ``transcriptions``: ``POST /v1/audio/transcriptions`` as multipart/form-data
  (``file``, ``model``, ``response_format``, ``temperature``, ``stream``).
* ``images``: ``POST /v1/images/generations`` JSON (``prompt``, ``n``, ``size``,
  ``response_format`` = ``b64_json``).
* ``videos``: ``POST /v1/videos`` (OpenAI's Videos API) as multipart/form-data,
  or JSON with ``video_form=json``.

``openai_request.build_body`` builds each body from these parts, as bytes once per
sample; a multipart body carries its own boundary in its first line
(``multipart_content_type`` reads it back). Nothing here reads the config.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import TYPE_CHECKING, Any

from infermeter.errors import ConfigError
from infermeter.suts.prompts import MediaLike, Prompt

if TYPE_CHECKING:
    from infermeter.suts.registry import SutContext

MEDIA_APIS = ("transcriptions", "images", "videos")
API_PATHS = {
    "completions": "/completions",
    "chat": "/chat/completions",
    "transcriptions": "/audio/transcriptions",
    "images": "/images/generations",
    "videos": "/videos",
}
# The request each benchmark modality sends (workloads.datasets.media_readers.modality).
API_OF_MODALITY = {
    "vision-chat": "chat",
    "speech": "transcriptions",
    "text-to-image": "images",
    "text-to-video": "videos",
}
RESPONSE_FORMATS = {
    "transcriptions": ("json", "text", "verbose_json", "srt", "vtt"),
    "images": ("b64_json", "url"),
}
VIDEO_FORMS = ("multipart", "json")
AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3", "audio/flac": "flac"}


def chat_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """Chat messages whose last user turn carries the text, then the media parts."""
    parts = [_part(m) for m in prompt.media]
    if prompt.messages is None:
        text = prompt.text or ""
        return [{"role": "user", "content": [{"type": "text", "text": text}, *parts]}]
    messages: list[dict[str, Any]] = [dict(m) for m in prompt.messages]
    for message in reversed(messages):
        if message.get("role") == "user":
            text = str(message.get("content", ""))
            message["content"] = [{"type": "text", "text": text}, *parts]
            return messages
    return [*messages, {"role": "user", "content": parts}]


def _part(media: MediaLike) -> dict[str, Any]:
    encoded = base64.b64encode(media.data).decode("ascii")
    if media.mime.startswith("image/"):
        url = f"data:{media.mime};base64,{encoded}"
        return {"type": "image_url", "image_url": {"url": url}}
    audio_format = AUDIO_FORMATS.get(media.mime)
    if audio_format is not None:
        return {
            "type": "input_audio",
            "input_audio": {"data": encoded, "format": audio_format},
        }
    raise ConfigError(
        f"{media.name!r} ({media.mime}) cannot be sent in a chat message; "
        f"images and {', '.join(AUDIO_FORMATS)} audio can"
    )


def _field_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _safe_name(name: str) -> str:
    return name.replace('"', "%22").replace("\r", "").replace("\n", "")


def multipart(fields: dict[str, Any], files: list[tuple[str, MediaLike]]) -> bytes:
    """A multipart/form-data body (RFC 7578): text fields, then files."""
    digest = hashlib.sha256(b"".join(f.data for _, f in files)).hexdigest()
    boundary = f"infermeter-{digest[:24]}".encode()
    while any(boundary in f.data for _, f in files):  # never in practice
        boundary += b"x"
    out: list[bytes] = []
    for name, value in fields.items():
        out.append(
            b'--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n'
            % (boundary, _safe_name(name).encode(), _field_text(value).encode())
        )
    for name, media in files:
        head = (
            f'Content-Disposition: form-data; name="{_safe_name(name)}"; '
            f'filename="{_safe_name(media.name)}"\r\nContent-Type: {media.mime}'
        )
        out.append(b"--%s\r\n%s\r\n\r\n" % (boundary, head.encode()))
        out.append(media.data + b"\r\n")
    out.append(b"--%s--\r\n" % boundary)
    return b"".join(out)


def multipart_content_type(body: bytes) -> str:
    """The Content-Type of a body ``multipart`` built (its boundary is its first line)."""
    boundary = body[2 : body.index(b"\r\n")].decode("ascii")
    return f"multipart/form-data; boundary={boundary}"


def with_media_api(context: SutContext) -> dict[str, str]:
    """The SUT options, with ``api`` defaulting to what the benchmark's modality sends."""
    options = dict(context.options)
    if "api" in options or not context.benchmark:
        return options
    from infermeter.workloads.datasets.media_readers import modality
    from infermeter.workloads.registry import get_benchmark

    try:
        kind = modality(get_benchmark(context.benchmark))
    except ConfigError:  # a benchmark the registry does not know: text
        return options
    if kind is not None:
        options["api"] = API_OF_MODALITY[kind]
    return options
