"""Spec tables as package data: reading TOML, user overrides, lookup by key or alias."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from infermeter.errors import ConfigError

PRECISION_BYTES = {
    "fp32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
    "int4": 0.5,
}
# The rate a precision's matrix multiplies run at: int4 is weight-only (W4A16).
COMPUTE_RATE = {
    "fp32": "bf16",
    "fp16": "bf16",
    "bf16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
    "fp4": "fp4",
    "int4": "bf16",
}


def read_toml(name: str) -> dict[str, Any]:
    text = (
        resources.files("infermeter.perfmodel")
        .joinpath("data")
        .joinpath(name)
        .read_text()
    )
    return tomllib.loads(text)


def read_user(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"Spec file {str(path)!r} not found; pass an existing TOML file."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"Spec file {str(path)!r} is not valid TOML: {exc}."
        ) from None


T = TypeVar("T")


def norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


class _Aliased(Protocol):
    aliases: tuple[str, ...]


def lookup(table: Mapping[str, T], name: str, what: str) -> T:
    """An entry by key or alias; an unknown name lists the known keys."""
    key = norm(name)
    if key in table:
        return table[key]
    for entry in table.values():
        if key in cast(_Aliased, entry).aliases:
            return entry
    raise ConfigError(f"Unknown {what} {name!r}. Known: {', '.join(sorted(table))}.")


def check_positive(
    what: str,
    key: str,
    entry: object,
    fields: tuple[str, ...],
    zero_ok: tuple[str, ...] = (),
) -> None:
    """One-line ConfigError unless each of ``entry``'s ``fields`` is a finite number
    > 0 (>= 0 for ``zero_ok``: a part without a scale-up link), or None; a user
    file's negative bandwidth or NaN rate would reach the roofline as a speed."""
    for field in fields:
        value = getattr(entry, field)
        if value is None:
            continue
        low_ok = value >= 0 if field in zero_ok else value > 0
        if not (math.isfinite(value) and low_ok):
            bound = ">= 0" if field in zero_ok else "> 0"
            raise ConfigError(
                f"{what} {key!r}: {field} must be a number {bound} (got {value})."
            )


def not_a_number(what: str, key: str, exc: Exception) -> ConfigError:
    """The one-line error for a field that is not a number (``float("fast")``)."""
    return ConfigError(
        f"{what} {key!r}: a field is not a number ({exc}); fix it in the file."
    )
