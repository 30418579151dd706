"""Check a TOML table's values against a dataclass's field types, one line per fault.

A custom benchmark file reaches the same dataclasses as the built-in table, and a
dataclass does not check its types: text where a count belongs, a negative latency
bound or a single string where a list belongs would otherwise surface later as an
internal error, or as a bound no run can meet.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from typing import Any

from infermeter.errors import ConfigError

_DESCRIBE = {
    bool: "true or false",
    int: "a whole number >= 0",
    float: "a number >= 0",
    str: "text",
}


def check_fields(
    raw: Mapping[str, Any],
    hints: Mapping[str, Any],
    where: str,
    *,
    signed: bool = False,
) -> None:
    """ConfigError naming ``where`` and the field unless each value in ``raw`` fits
    its type in ``hints`` (numbers finite, and >= 0 unless ``signed``); fields
    without a plain type (nested tables) are the caller's to check."""
    for key, value in raw.items():
        hint = hints.get(key)
        if hint is None:
            continue
        if typing.get_origin(hint) is tuple:
            if not isinstance(value, list):
                raise ConfigError(f"{where}: {key} must be a list (got {value!r}).")
            for item in value:
                _check(key, item, typing.get_args(hint)[0], where, signed)
            continue
        _check(key, value, _plain(hint), where, signed)


def _plain(hint: Any) -> Any:
    """``X`` of ``X | None``; ``hint`` itself otherwise."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        kinds = [t for t in typing.get_args(hint) if t is not type(None)]
        return kinds[0] if len(kinds) == 1 else hint
    return hint


def _check(key: str, value: Any, kind: Any, where: str, signed: bool) -> None:
    if kind not in _DESCRIBE:
        return
    if kind is bool or kind is str:
        ok = isinstance(value, kind)
    else:
        allowed = (int,) if kind is int else (int, float)
        ok = (
            isinstance(value, allowed)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (signed or value >= 0)
        )
    if not ok:
        what = _DESCRIBE[kind].replace(" >= 0", "") if signed else _DESCRIBE[kind]
        raise ConfigError(f"{where}: {key} must be {what} (got {value!r}).")
