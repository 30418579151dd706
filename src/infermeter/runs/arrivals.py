"""Arrival times for open-loop load: constant, Poisson and gamma (bursty), seeded numpy.

Times are int64 ns from the start of the phase, non-decreasing; they are the
``scheduled_ns`` of a ``Schedule`` the engine issues against absolute deadlines.
"""

from __future__ import annotations

import math

import numpy as np

from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import NsArray

PATTERNS = ("constant", "poisson", "gamma")
NS_PER_S = 1_000_000_000


def arrival_times(
    pattern: str,
    rate: float,
    count: int,
    *,
    seed: int = 0,
    burstiness: float = 1.0,
) -> NsArray:
    """``count`` arrival times at ``rate`` per second.

    ``gamma`` gaps have shape ``burstiness`` and mean ``1 / rate``: below 1 is
    burstier than Poisson, above 1 smoother, 1 is Poisson (vLLM's convention).
    """
    if not rate > 0 or not math.isfinite(rate):
        raise ConfigError(f"Arrival rate must be a positive number (got {rate})")
    if count < 0:
        raise ConfigError(f"Request count must be >= 0 (got {count})")
    gaps = _gaps_s(pattern, rate, count, seed, burstiness)
    return np.cumsum(np.round(gaps * NS_PER_S).astype(np.int64))


def _gaps_s(
    pattern: str, rate: float, count: int, seed: int, burstiness: float
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if pattern == "constant":
        return np.full(count, 1.0 / rate)
    if pattern == "poisson":
        return rng.exponential(1.0 / rate, count)
    if pattern == "gamma":
        if not burstiness > 0:
            raise ConfigError(f"--burstiness must be > 0 (got {burstiness})")
        return rng.gamma(burstiness, 1.0 / (rate * burstiness), count)
    raise ConfigError(
        f"Unknown arrival pattern {pattern!r}. Known: {', '.join(PATTERNS)}"
    )


def count_for(rate: float, duration_s: float, minimum: int = 1) -> int:
    """Requests needed to cover ``duration_s`` at ``rate`` (at least ``minimum``)."""
    return max(minimum, math.ceil(rate * duration_s))
