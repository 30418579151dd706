"""Token-length distributions of synthetic prompts.

Kinds: fixed, uniform, normal, lognormal, histogram.

Text form (CLI and TOML): ``128`` (fixed), ``fixed:128``, ``uniform:64:256``, ``normal:MEAN:STD``,
``lognormal:MEDIAN:SIGMA``, ``histogram:16=0.5,64=0.3,256=0.2``. Draws are
rounded and clipped to ``[1, max_len]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError

KINDS = ("fixed", "uniform", "normal", "lognormal", "histogram")


@dataclass(frozen=True, slots=True)
class LengthSpec:
    """A distribution of token counts."""

    kind: str
    a: float = 0.0
    b: float = 0.0
    values: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()
    max_len: int = 1 << 20

    def draw(self, rng: np.random.Generator) -> int:
        """One length from this distribution."""
        if self.kind == "fixed":
            value = self.a
        elif self.kind == "uniform":
            value = float(rng.integers(int(self.a), int(self.b) + 1))
        elif self.kind == "normal":
            value = rng.normal(self.a, self.b)
        elif self.kind == "lognormal":
            value = float(np.exp(rng.normal(np.log(self.a), self.b)))
        else:
            value = float(
                rng.choice(np.asarray(self.values), p=np.asarray(self.weights))
            )
        return int(min(max(round(value), 1), self.max_len))

    @property
    def mean(self) -> float:
        """Expected value before clipping (for sizing and reports)."""
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        if self.kind == "lognormal":
            return float(self.a * np.exp(self.b**2 / 2))
        if self.kind == "histogram":
            return float(np.dot(self.values, self.weights))
        return self.a


def fixed(n: int) -> LengthSpec:
    """Always ``n`` tokens."""
    return LengthSpec("fixed", float(n))


def parse_length(text: str) -> LengthSpec:
    """Parse the text form in the module docstring, with a one-line error on failure.

    A bare number is a fixed length (``128`` = ``fixed:128``).
    """
    given = text
    if _is_number(text):
        text = f"fixed:{text.strip()}"
    kind, _, rest = text.strip().partition(":")
    kind = kind.lower()
    if kind == "histogram":
        return _histogram(rest)
    try:
        numbers = [float(x) for x in rest.split(":")] if rest else []
    except ValueError:
        numbers = []
    arity = {"fixed": 1, "uniform": 2, "normal": 2, "lognormal": 2}
    if kind not in arity:
        raise ConfigError(
            f"Unknown length distribution {text!r}. Known: {', '.join(KINDS)} "
            "(e.g. fixed:128, uniform:64:256, lognormal:200:0.5)."
        )
    if len(numbers) != arity[kind] or not all(
        math.isfinite(n) and n >= 0 for n in numbers
    ):
        raise ConfigError(
            f"Length distribution {given!r} needs {arity[kind]} finite non-negative "
            f"number(s) after '{kind}:'."
        )
    if kind == "uniform" and numbers[0] > numbers[1]:
        raise ConfigError(f"Length distribution {text!r}: low is above high.")
    return LengthSpec(kind, numbers[0], numbers[1] if len(numbers) > 1 else 0.0)


def _is_number(text: str) -> bool:
    """A bare number (``128``, ``-5``, ``inf``): a fixed length, checked as one."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _histogram(rest: str) -> LengthSpec:
    pairs = [p.split("=") for p in rest.split(",") if p]
    shape = f"Histogram {rest!r} must look like histogram:16=0.5,64=0.3,256=0.2"
    if not pairs or any(len(p) != 2 for p in pairs):
        raise ConfigError(f"{shape}.")
    try:
        values = tuple(int(v) for v, _ in pairs)
        weights = np.asarray([float(w) for _, w in pairs])
    except ValueError:
        raise ConfigError(f"{shape} (whole lengths, numeric weights).") from None
    if min(values) < 1 or not np.isfinite(weights).all():
        raise ConfigError(f"{shape} (lengths >= 1, finite weights).")
    if (weights < 0).any() or weights.sum() <= 0:
        raise ConfigError(f"Histogram {rest!r}: weights must be >= 0 and not all 0.")
    weights = weights / weights.sum()
    return LengthSpec("histogram", values=values, weights=tuple(weights.tolist()))
