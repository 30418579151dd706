"""C number parsing as LoadGen's conf reader does it (``strtoul`` base 0, ``strtod``).

Conf values must read exactly as the official parser reads them, quirks
included: a leading ``0`` means octal for integer keys, and an integer key
given ``1.5`` or ``1e3`` keeps only the integer prefix (1).
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

U64_MAX = (1 << 64) - 1
# Most digits a number below 2**64 can have in each base (more: it overflows).
_U64_DIGITS = {8: 22, 10: 20, 16: 16}

_DEC_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX_FLOAT = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
)
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_OCTAL = re.compile(r"[+-]?0[0-7]+")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_DEC_DIGITS = frozenset("0123456789")
_OCT_DIGITS = frozenset("01234567")


class CPrefix(NamedTuple):
    """What ``strtoull(token, &end, 0)`` reads."""

    value: int  # as C returns it: saturated at 2**64 - 1, negated modulo 2**64
    used: int  # characters consumed (0 when no digits were read)
    overflow: bool  # the digits exceed 2**64 - 1 (C saturates and sets ERANGE)


def strtoull_prefix(token: str) -> CPrefix:
    """``strtoull(token, &end, 0)``: the integer prefix of the token, read like C."""
    pos = 0
    negative = False
    if token[:1] in ("+", "-"):
        negative = token[0] == "-"
        pos = 1
    base, digits = 10, _DEC_DIGITS
    if token[pos : pos + 2] in ("0x", "0X") and token[pos + 2 : pos + 3] in _HEX_DIGITS:
        base, digits, pos = 16, _HEX_DIGITS, pos + 2
    elif token[pos : pos + 1] == "0":
        base, digits = 8, _OCT_DIGITS
    start = pos
    while pos < len(token) and token[pos] in digits:
        pos += 1
    if pos == start:
        return CPrefix(0, 0, False)
    significant = token[start:pos].lstrip("0")
    if len(significant) > _U64_DIGITS[base]:
        # Past 2**64 for sure: C saturates; int() of 100,000 digits would refuse.
        return CPrefix(U64_MAX if not negative else 1, pos, True)
    raw = int(token[start:pos], base)
    value = min(raw, U64_MAX)
    if negative:
        # C negates in unsigned arithmetic: "-1" reads as 2**64 - 1.
        value = (-value) & U64_MAX
    return CPrefix(value, pos, raw > U64_MAX)


def strtod_full(token: str) -> float | None:
    """``strtod`` when it consumes the whole token, else None."""
    if _DEC_FLOAT.fullmatch(token):
        return float(token)
    if _HEX_FLOAT.fullmatch(token):
        return _hex_float(token)
    if _SPECIAL.fullmatch(token):
        sign = -1.0 if token.startswith("-") else 1.0
        return sign * (math.inf if "inf" in token.lower() else math.nan)
    return None


def _hex_float(token: str) -> float:
    # float.fromhex accepts the same grammar as C hex floats
    # (sign, 0x, hex digits, optional point, optional p-exponent).
    return float.fromhex(token)


def is_conf_number(token: str) -> bool:
    """True when the official parser accepts the token as a value (int or double)."""
    return strtoull_prefix(token).used == len(token) or strtod_full(token) is not None


def is_octal_literal(token: str) -> bool:
    """True for ``010``-style tokens that C reads as octal (``010`` == 8)."""
    return bool(_OCTAL.fullmatch(token))
