"""``--sut-opt`` strings -> ``OpenAIConfig``; a dataset QSL seen as a ``PromptSource``.

Options (all ``key=value``): url, model, api, stream, max_tokens, temperature,
ignore_eos, min_tokens, include_usage, extra_body (JSON), tokenizer,
connect_timeout, first_token_timeout, timeout, unreachable_after (seconds),
max_connections, max_in_flight, uvloop, wire (lean or aiohttp), api_key_env,
api_key_file, workers, ray, ray_actors. A fleet: ``url`` holds
one base URL per replica, comma-separated; routing (round-robin,
least-outstanding, prefix), routing_block (tokens per prefix block),
routing_cache_blocks (per replica), routing_overlap_weight. For the media APIs:
response_format, size, poll_interval (seconds) and video_form.
"""

from __future__ import annotations

import json
from typing import Any

from infermeter.errors import ConfigError
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, Timeouts
from infermeter.suts.prompts import Prompt, PromptSource, SyntheticPrompts
from infermeter.suts.registry import sut_number
from infermeter.suts.routing import (
    DEFAULT_BLOCK_SIZE,
    DEFAULT_CACHE_BLOCKS,
    DEFAULT_OVERLAP_WEIGHT,
    RoutingConfig,
)

KNOWN = [
    "url",
    "model",
    "api",
    "stream",
    "max_tokens",
    "temperature",
    "ignore_eos",
    "min_tokens",
    "include_usage",
    "extra_body",
    "tokenizer",
    "connect_timeout",
    "first_token_timeout",
    "timeout",
    "unreachable_after",
    "max_connections",
    "max_in_flight",
    "uvloop",
    "wire",
    "api_key_env",
    "api_key_file",
    "workers",
    "ray",
    "ray_actors",
    "routing",
    "routing_block",
    "routing_cache_blocks",
    "routing_overlap_weight",
    "response_format",
    "size",
    "poll_interval",
    "video_form",
]


def config_from_options(options: dict[str, str]) -> tuple[OpenAIConfig, ApiKey | None]:
    """Build the config and load the key; unknown keys are a ``ConfigError``."""
    unknown = sorted(set(options) - set(KNOWN))
    if unknown:
        raise ConfigError(
            f"Unknown openai SUT option(s) {', '.join(unknown)}. Known: {', '.join(KNOWN)}"
        )
    if "url" not in options or "model" not in options:
        raise ConfigError(
            "The openai SUT needs --url and --model, e.g. "
            "--url http://127.0.0.1:8000/v1 --model my-model"
        )
    o = _Options(options)
    urls = tuple(u.strip() for u in options["url"].split(",") if u.strip())
    config = OpenAIConfig(
        url=urls[0] if urls else options["url"],
        replica_urls=urls if len(urls) > 1 else (),
        routing=RoutingConfig(
            policy=options.get("routing", "round-robin"),
            block_size=o.integer("routing_block") or DEFAULT_BLOCK_SIZE,
            cache_blocks=o.integer("routing_cache_blocks") or DEFAULT_CACHE_BLOCKS,
            overlap_weight=o.number("routing_overlap_weight", DEFAULT_OVERLAP_WEIGHT)
            or 0.0,
        ),
        model=options["model"],
        api=options.get("api", "completions"),
        stream=o.flag("stream", True),
        max_tokens=o.integer("max_tokens"),
        temperature=o.number("temperature", 0.0),
        ignore_eos=o.flag("ignore_eos", False),
        min_tokens=o.flag("min_tokens", False),
        include_usage=o.flag("include_usage", True),
        extra_body=o.json("extra_body"),
        timeouts=Timeouts(
            connect_s=o.number("connect_timeout", 10.0) or 0.0,
            first_token_s=o.number("first_token_timeout", 0.0) or 0.0,
            total_s=o.number("timeout", 600.0) or 0.0,
        ),
        max_connections=o.integer("max_connections") or 1024,
        max_in_flight=o.integer("max_in_flight") or 0,
        tokenizer_file=options.get("tokenizer"),
        unreachable_after_s=o.number("unreachable_after", 30.0) or 0.0,
        use_uvloop=o.flag("uvloop", True),
        wire=options.get("wire", "lean"),
        workers=o.integer("workers") or 1,
        ray=options.get("ray") or None,
        ray_actors=o.integer("ray_actors") or 0,
        response_format=options.get("response_format"),
        size=options.get("size"),
        poll_interval_s=o.number("poll_interval", 0.25) or 0.0,
        video_form=options.get("video_form", "multipart"),
    )
    config.validate()
    key = ApiKey.load(env=options.get("api_key_env"), file=options.get("api_key_file"))
    return config, key


class _Options:
    def __init__(self, options: dict[str, str]) -> None:
        self._o = options

    def flag(self, key: str, default: bool) -> bool:
        text = self._o.get(key)
        if text is None:
            return default
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"SUT option {key}={text!r}: use true or false")

    def number(self, key: str, default: float | None) -> float | None:
        text = self._o.get(key)
        return default if text is None else sut_number(key, text)

    def integer(self, key: str) -> int | None:
        value = self.number(key, None)
        return None if value is None else int(value)

    def json(self, key: str) -> dict[str, Any]:
        text = self._o.get(key)
        if text is None:
            return {}
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise ConfigError(
                f"SUT option {key} must be a JSON object, e.g. {key}='{{\"top_p\": 1}}'"
            )
        return value


class QSLPrompts:
    """A QSL with ``sample(i)`` (prompt, input_ids, messages, output_tokens) as prompts.

    Duck-typed, so the SUT layer needs no import of the dataset layer.
    """

    def __init__(self, qsl: Any) -> None:
        self._qsl = qsl

    @property
    def count(self) -> int:
        """How many samples the QSL holds (for copying the prompts to client processes)."""
        return int(self._qsl.total_sample_count)

    def prompt(self, index: int) -> Prompt:
        sample = self._qsl.sample(index)
        messages = getattr(sample, "messages", None)
        text = getattr(sample, "prompt", None)
        # Text when there is some: token ids only fit a server with the same
        # tokenizer as the dataset's.
        ids = None if text is not None else getattr(sample, "input_ids", None)
        return Prompt(
            text=text,
            token_ids=None if ids is None else [int(t) for t in ids],
            messages=None
            if messages is None
            else [{"role": role, "content": content} for role, content in messages],
            max_tokens=getattr(sample, "output_tokens", None),
            media=getattr(sample, "media", ()),
        )


def prompts_for(qsl: Any) -> PromptSource:
    """The QSL itself when it is a PromptSource, its samples, or synthetic prompts."""
    if isinstance(qsl, PromptSource):
        return qsl
    if callable(getattr(qsl, "sample", None)):
        return QSLPrompts(qsl)
    return SyntheticPrompts(max(1, int(getattr(qsl, "total_sample_count", 1))))
