"""Configuration of the OpenAI HTTP SUT and how it shapes each request body.

The API key lives only in ``ApiKey`` (never in ``repr``, ``params()``, logs or
errors); ``OpenAIConfig.params()`` is what may be written to a run folder.
Media request bodies are built here from ``openai_media``'s parts and multipart
encoding.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.suts import openai_media
from infermeter.suts.prompts import Prompt
from infermeter.suts.routing import RoutingConfig

APIS = ("completions", "chat", *openai_media.MEDIA_APIS)
WIRES = ("lean", "aiohttp")

# A bearer token wherever it is echoed (a header, JSON, a log line), even when
# it is not the key we sent (a gateway's own) or only part of it.
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"'<>,;}\]]+")


def redact(text: str, key: ApiKey | None = None) -> str:
    """``text`` with ``key`` and any ``Bearer <token>`` replaced by ``***``."""
    if key is not None and key.value:
        text = text.replace(key.value, "***")
    return _BEARER.sub(r"\1 ***", text)


class ApiKey:
    """A secret that never prints itself."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value.strip()

    @classmethod
    def load(
        cls,
        *,
        env: str | None = None,
        file: str | None = None,
        file_hint: str = "--sut-opt api_key_file=PATH",
    ) -> ApiKey | None:
        """Read the key from environment variable ``env`` or from ``file``
        (``file_hint``: how the user names the file, for the error's fix)."""
        if env:
            value = os.environ.get(env)
            if not value:
                raise ConfigError(
                    f"Environment variable {env!r} is not set or empty; "
                    f"export it, or name a file that holds the key with {file_hint}"
                )
            return cls(value)
        if file:
            try:
                return cls(Path(file).read_text(encoding="utf-8"))
            except OSError as exc:
                raise ConfigError(
                    f"Cannot read API key file {file!r}: {exc.strerror}"
                ) from None
        return None

    @property
    def value(self) -> str:
        """The secret itself: only for the Authorization header."""
        return self._value

    def header(self) -> str:
        return f"Bearer {self._value}"

    def redact(self, text: str) -> str:
        """``text`` with the key (and any bearer token) replaced, for anything
        that leaves the process."""
        return redact(text, self)

    def __repr__(self) -> str:
        return "ApiKey(***)"

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Per-request limits in seconds (0 = none): connect, first token, whole request."""

    connect_s: float = 10.0
    first_token_s: float = 0.0
    total_s: float = 600.0


@dataclass(frozen=True, slots=True)
class OpenAIConfig:
    """Everything the HTTP SUT needs except the prompts and the key."""

    url: str
    model: str
    api: str = "completions"
    stream: bool = True
    max_tokens: int | None = None
    temperature: float | None = 0.0
    ignore_eos: bool = False
    min_tokens: bool = False
    include_usage: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)
    max_connections: int = 1024
    # Concurrency cap: requests past it wait in the client; their send time
    # (recorded after the wait) shows the queueing. 0 = no cap.
    max_in_flight: int = 0
    read_bufsize: int = 1 << 20
    # A folder with tokenizer.json, such a file, or a tiktoken encoding name:
    # it re-counts output tokens when the server sends no usage.
    tokenizer_file: str | None = None
    # End the run when every request for this long failed to connect (0 = never).
    unreachable_after_s: float = 30.0
    use_uvloop: bool = True
    # The HTTP wire: "lean" (lean_wire: httptools, its own pool) for http://
    # text, or "aiohttp" (http_wire; always for https:// and media APIs).
    wire: str = "lean"
    workers: int = 1
    # Ray actors as the clients: the cluster address ("local", "auto", HOST:PORT)
    # and how many (0 = one per node).
    ray: str | None = None
    ray_actors: int = 0
    # A fleet: one base URL per replica (``url`` is the first); empty = one.
    replica_urls: tuple[str, ...] = ()
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    # Media APIs (transcriptions, images, videos): see openai_media.
    response_format: str | None = None
    size: str | None = None
    poll_interval_s: float = 0.25
    video_form: str = "multipart"

    def validate(self) -> None:
        if self.api not in APIS:
            raise ConfigError(f"Unknown API {self.api!r}. Known: {', '.join(APIS)}")
        for url in self.urls:
            if not url.startswith(("http://", "https://")):
                raise ConfigError(
                    f"URL {url!r} must start with http:// or https://, "
                    "e.g. http://127.0.0.1:8000/v1"
                )
        self.routing.validate()
        if self.wire not in WIRES:
            raise ConfigError(
                f"wire={self.wire!r} is not a wire; use one of: {', '.join(WIRES)}"
            )
        if not self.model:
            raise ConfigError("--model is required: the model name the server serves")
        if self.max_connections < 1 or self.workers < 1:
            raise ConfigError(
                f"max_connections ({self.max_connections}) and workers "
                f"({self.workers}) must be >= 1"
            )
        _validate_media(self)

    @property
    def urls(self) -> tuple[str, ...]:
        """The base URL of every replica (one for a single endpoint)."""
        return self.replica_urls or (self.url,)

    @property
    def endpoint(self) -> str:
        """The full URL requests go to (``/v1`` + the API path unless given)."""
        return self.endpoint_of(self.url)

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The request URL of every replica, in ``urls`` order."""
        return tuple(self.endpoint_of(url) for url in self.urls)

    def endpoint_of(self, url: str) -> str:
        base = url.rstrip("/")
        path = openai_media.API_PATHS.get(self.api, "/completions")
        if base.endswith(("/completions", path)):
            return base
        return base + path

    def params(self) -> dict[str, Any]:
        """The settings as plain data for run.json (holds no secret)."""
        return asdict(self)


def build_body(config: OpenAIConfig, prompt: Prompt) -> bytes:
    """The request body for ``prompt`` under ``config``'s shaping rules."""
    if config.api in openai_media.MEDIA_APIS:
        return _media_body(config, prompt)
    body: dict[str, Any] = {"model": config.model}
    if config.api == "chat":
        body["messages"] = _messages(prompt)
    else:
        body["prompt"] = _completion_prompt(prompt)
    max_tokens = (
        prompt.max_tokens if prompt.max_tokens is not None else config.max_tokens
    )
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
        if config.min_tokens:
            body["min_tokens"] = max_tokens
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.ignore_eos:
        body["ignore_eos"] = True
    if config.stream:
        body["stream"] = True
        if config.include_usage:
            body["stream_options"] = {"include_usage": True}
    body.update(config.extra_body)
    return json.dumps(body, separators=(",", ":")).encode()


def _messages(prompt: Prompt) -> list[dict[str, Any]]:
    if prompt.media:
        return openai_media.chat_messages(prompt)
    if prompt.messages is not None:
        return list(prompt.messages)
    if prompt.text is not None:
        return [{"role": "user", "content": prompt.text}]
    raise ConfigError(
        "A chat request needs text or messages, but the dataset gives "
        "token ids only; use --api completions"
    )


def _completion_prompt(prompt: Prompt) -> str | list[int]:
    if prompt.token_ids is not None:
        return [int(t) for t in prompt.token_ids]
    if prompt.text is not None:
        return prompt.text
    if prompt.messages:
        return "\n".join(m.get("content", "") for m in prompt.messages)
    raise ConfigError("A prompt has neither text, messages nor token ids")


def _validate_media(config: OpenAIConfig) -> None:
    """One-line errors for media settings that cannot work."""
    allowed = openai_media.RESPONSE_FORMATS.get(config.api)
    if config.response_format is not None and allowed is None:
        raise ConfigError(
            f"response_format applies to the transcriptions and images APIs, "
            f"not --api {config.api}"
        )
    if allowed is not None and config.response_format not in (None, *allowed):
        raise ConfigError(
            f"response_format={config.response_format!r} is not valid for "
            f"{config.api}; use one of {', '.join(allowed)}"
        )
    if config.video_form not in openai_media.VIDEO_FORMS:
        raise ConfigError(
            f"video_form={config.video_form!r}: use {' or '.join(openai_media.VIDEO_FORMS)}"
        )
    if config.poll_interval_s <= 0:
        raise ConfigError(
            f"poll_interval must be > 0 seconds (got {config.poll_interval_s:g})"
        )


def _media_body(config: OpenAIConfig, prompt: Prompt) -> bytes:
    """The body of a transcriptions, images or videos request."""
    if config.api == "transcriptions":
        return _transcription(config, prompt)
    if config.api == "images":
        body: dict[str, Any] = {
            "model": config.model,
            "prompt": _text(prompt, config.api),
            "n": 1,
            "response_format": config.response_format or "b64_json",
        }
        if config.size:
            body["size"] = config.size
        body.update(config.extra_body)
        return json.dumps(body, separators=(",", ":")).encode()
    return _video(config, prompt)


def _text(prompt: Prompt, api: str) -> str:
    if prompt.text:
        return prompt.text
    raise ConfigError(
        f"The {api} API needs a text prompt per sample, but the dataset gives none"
    )


def _transcription(config: OpenAIConfig, prompt: Prompt) -> bytes:
    audio = [m for m in prompt.media if m.mime.startswith("audio/")]
    if not audio:
        raise ConfigError(
            "The transcriptions API needs an audio file per sample, but the dataset "
            "gives none; use a speech dataset (e.g. --dataset-format librispeech)"
        )
    fields: dict[str, Any] = {
        "model": config.model,
        "response_format": config.response_format or "json",
    }
    if config.temperature is not None:
        fields["temperature"] = config.temperature
    if prompt.text:
        fields["prompt"] = prompt.text  # Whisper's context prompt
    if config.max_tokens is not None:
        fields["max_completion_tokens"] = config.max_tokens
    if config.stream:
        fields["stream"] = True
        if config.include_usage:
            fields["stream_include_usage"] = True  # vLLM: usage in the last chunk
    fields.update(config.extra_body)
    return openai_media.multipart(fields, [("file", audio[0])])


def _video(config: OpenAIConfig, prompt: Prompt) -> bytes:
    fields: dict[str, Any] = {"model": config.model, "prompt": _text(prompt, "videos")}
    if config.size:
        fields["size"] = config.size
    fields.update(config.extra_body)
    if config.video_form == "json":
        return json.dumps(fields, separators=(",", ":")).encode()
    return openai_media.multipart(fields, [])
