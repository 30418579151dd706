"""When the mock server emits each token: a pluggable ``TokenTiming``, distributions.

A timing turns one request into a ``TokenPlan`` (output length, time to the
first token, gaps between tokens). The mock server only follows plans, so a
simulator-driven timing (``serve-sim``) plugs in without touching the server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class MockRequest:
    """What a timing may look at: the request's shape and the server's load."""

    prompt_tokens: int
    max_tokens: int
    min_tokens: int = 0
    ignore_eos: bool = False
    stream: bool = True
    in_flight: int = 1
    arrival_s: float = 0.0


@dataclass(frozen=True, slots=True)
class TokenPlan:
    """How one response unfolds: ``gaps_s[i]`` is the wait before token ``i + 2``.

    ``gaps_s`` is None when all tokens go out together after ``ttft_s``.
    """

    n_tokens: int
    ttft_s: float = 0.0
    gaps_s: FloatArray | None = None


class TokenTiming(Protocol):
    """Plans each response; called on the server's event loop, so must not block."""

    def plan(self, request: MockRequest) -> TokenPlan:
        """The plan for ``request``."""
        ...


def output_length(request: MockRequest, natural: int) -> int:
    """Tokens to emit when the model would stop by itself after ``natural``.

    ``ignore_eos`` runs to ``max_tokens``; ``min_tokens`` is a floor.
    """
    if request.ignore_eos:
        return max(1, request.max_tokens)
    return max(1, min(max(natural, request.min_tokens), request.max_tokens))


class InstantTiming:
    """No compute: every token at once, ``max_tokens`` of them (max-throughput)."""

    def plan(self, request: MockRequest) -> TokenPlan:
        return TokenPlan(max(1, request.max_tokens))


@dataclass(frozen=True, slots=True)
class Distribution:
    """A seeded positive distribution written ``kind:a,b`` (seconds or tokens).

    Kinds: ``const:v``, ``uniform:lo,hi``, ``normal:mean,std`` (clipped at 0),
    ``lognormal:mean,std`` (of the values, not of their log), ``exp:mean``.
    """

    kind: str
    a: float
    b: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Distribution:
        kind, _, rest = text.partition(":")
        try:
            values = [float(v) for v in rest.split(",")] if rest else []
        except ValueError:
            values = []
        arity = {"const": 1, "exp": 1, "uniform": 2, "normal": 2, "lognormal": 2}
        if kind not in arity or len(values) != arity[kind] or min(values) < 0:
            raise ConfigError(
                f"Bad distribution {text!r}. Use const:V, exp:MEAN, uniform:LO,HI, "
                "normal:MEAN,STD or lognormal:MEAN,STD with values >= 0"
            )
        return cls(kind, values[0], values[1] if len(values) > 1 else 0.0)

    @property
    def mean(self) -> float:
        """The distribution's mean (before clipping at 0)."""
        return (self.a + self.b) / 2 if self.kind == "uniform" else self.a

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """``n`` draws, never negative."""
        if self.kind == "const":
            return np.full(n, self.a)
        if self.kind == "exp":
            return rng.exponential(self.a, n)
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b, n)
        if self.kind == "normal":
            return np.maximum(rng.normal(self.a, self.b, n), 0.0)
        return _lognormal(rng, self.a, self.b, n)


def _lognormal(rng: np.random.Generator, mean: float, std: float, n: int) -> FloatArray:
    if mean <= 0:
        return np.zeros(n)
    sigma2 = np.log1p((std / mean) ** 2)
    mu = np.log(mean) - sigma2 / 2
    return rng.lognormal(mu, np.sqrt(sigma2), n)


class DistributionTiming:
    """Timed mode: TTFT, inter-token latency and output length from distributions.

    One seeded generator serves all requests in arrival order (thread-safe), so
    a run's plans are reproducible when requests arrive in the same order.
    """

    def __init__(
        self,
        *,
        ttft_s: Distribution,
        itl_s: Distribution,
        output_tokens: Distribution | None = None,
        seed: int = 0,
    ) -> None:
        self.ttft_s = ttft_s
        self.itl_s = itl_s
        self.output_tokens = output_tokens
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def plan(self, request: MockRequest) -> TokenPlan:
        with self._lock:
            natural = request.max_tokens
            if self.output_tokens is not None:
                natural = round(float(self.output_tokens.sample(self._rng, 1)[0]))
            n = output_length(request, natural)
            ttft = float(self.ttft_s.sample(self._rng, 1)[0])
            gaps = self.itl_s.sample(self._rng, n - 1)
        return TokenPlan(n, ttft, gaps)
