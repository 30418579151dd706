"""Parsers shared by commands: durations with units, key=value options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infermeter.errors import ConfigError

if TYPE_CHECKING:
    from infermeter.workloads.datasets.factory import DatasetOptions

# Options that run and sweep declare alike.
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="[ADDRESS]",
        help="Send the load from Ray actors (pip install 'infermeter\\[ray]'). "
        "--ray alone: a private local cluster on 127.0.0.1; --ray auto: the "
        "cluster `ray start` runs here; --ray HOST:6379 or ray://HOST:10001.",
    ),
]
RayActors = Annotated[
    int | None,
    typer.Option(
        "--ray-actors", help="Ray actors sending the load (default: one per node)."
    ),
]

_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s|m|h)\s*$")


def parse_duration_ns(text: str, *, flag: str) -> int:
    """``500ms``, ``10s``, ``10m`` -> integer nanoseconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ConfigError(
            f"{flag} {text!r} is not a duration; give a number with a unit, "
            "e.g. 500ms, 10s or 10m"
        )
    return int(float(match.group(1)) * _UNITS_NS[match.group(2)])


def positive_seconds(text: str, *, flag: str, example: str) -> float:
    """A duration flag in seconds that must be above 0."""
    ns = parse_duration_ns(text, flag=flag)
    if ns <= 0:
        raise ConfigError(f"{flag} must be > 0 (got {text!r}); e.g. {example}")
    return ns / 1e9


def metrics_interval_s(text: str) -> float:
    """``--metrics-interval`` in seconds; 0 would scrape the servers in a busy loop."""
    return positive_seconds(text, flag="--metrics-interval", example="1s")


def parse_duration_ms(text: str, *, flag: str) -> int:
    return parse_duration_ns(text, flag=flag) // 1_000_000


def parse_key_values(items: list[str], *, flag: str) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"{flag} {item!r} is not key=value; e.g. {flag} latency_ms=20"
            )
        out[key.strip()] = value.strip()
    return out


def metrics_urls(values: list[str]) -> list[str] | None:
    """``--metrics-url`` values: None (each endpoint's own), [] for 'off', else the URLs."""
    if not values:
        return None
    if any(v.lower() in ("off", "none") for v in values):
        return []
    return values


def dataset_options(
    *,
    columns: list[str],
    tokenizer: Path | None,
    seed: int,
    input_len: str | None,
    output_len: str | None,
    prompts: str | None = None,
    allow_pickle: bool = False,
) -> DatasetOptions:
    """``DatasetOptions`` from the dataset flags of ``run`` and ``sweep``."""
    from infermeter.workloads.datasets.factory import DatasetOptions
    from infermeter.workloads.datasets.lengths import parse_length
    from infermeter.workloads.datasets.shapes import parse_prompt_shape

    shape = parse_prompt_shape(prompts or "random")
    return DatasetOptions(
        columns=parse_key_values(columns, flag="--dataset-column"),
        tokenizer=tokenizer,
        seed=seed,
        input_len=parse_length(input_len) if input_len else None,
        output_len=parse_length(output_len) if output_len else None,
        shared_prefix_tokens=shape.prefix_tokens,
        num_prefixes=shape.groups,
        conversation_turns=shape.turns if shape.kind == "multi-turn" else 0,
        allow_pickle=allow_pickle,
    )


HTTP_SUTS = ("openai", "sim")


def client_scale(
    *,
    sut: str,
    workers: int | None,
    ray: str | None = None,
    ray_actors: int | None = None,
) -> dict[str, str]:
    """SUT options for ``--workers`` (client processes) or ``--ray`` (Ray actors)."""
    if workers is None and ray is None and ray_actors is None:
        return {}
    flag = "--workers" if workers is not None else "--ray"
    if sut not in HTTP_SUTS:
        raise ConfigError(
            f"{flag} applies to the HTTP client (--sut openai or sim), not --sut {sut}"
        )
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be >= 1 (got {workers}); e.g. --workers 2")
    if ray_actors is not None and ray is None:
        raise ConfigError("--ray-actors needs --ray (e.g. --ray --ray-actors 4)")
    if ray is None:
        return {"workers": str(workers)}
    if workers is not None:
        raise ConfigError("Use --workers or --ray, not both")
    if ray_actors is not None and ray_actors < 1:
        raise ConfigError(f"--ray-actors must be >= 1 (got {ray_actors})")
    return {"ray": ray, "ray_actors": str(ray_actors or 0)}
