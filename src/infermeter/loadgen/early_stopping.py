"""MLPerf early stopping (spec section 2.4): how many queries a latency claim needs.

A system whose true under-latency rate is exactly ``p`` shows at most ``t``
over-latency queries among ``h + t`` with probability
``odds(h, t) = I_p(h, t + 1)`` (the binomial CDF). ``h_min(t)`` is the smallest
``h`` with ``odds(h, t) < 1 - c`` (c = 0.99, tolerance d = 0, as LoadGen).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError

CONFIDENCE = 0.99
TOLERANCE = 0.0
_THRESHOLD = 1.0 - CONFIDENCE
_CHUNK = 4096
# Terms this much smaller than the running sum no longer change a double.
_NEGLIGIBLE_LOG = math.log(1e-18)


@dataclass(frozen=True, slots=True)
class EarlyStoppingEstimate:
    """SingleStream / MultiStream result: the percentile estimate from ``n`` queries.

    ``t`` counts the queries at or above the estimate; LoadGen reports "Would
    discard ``discard`` highest latency queries" with ``discard = t - 1``.
    ``estimate_ns`` is None when fewer than ``min_queries`` were processed.
    """

    ok: bool
    t: int
    discard: int
    estimate_ns: int | None
    min_queries: int


def odds(h: int, t: int, percentile: float) -> float:
    """P(at most ``t`` over-latency among ``h + t`` queries) at under-latency rate p.

    The binomial CDF ``sum_{x<=t} C(h+t, x) q^x p^(h+t-x)``, q = 1 - p, summed
    from ``x = t`` down in log space; terms shrink geometrically below the mode,
    so only ``O(sqrt(t))`` of them matter even for millions of queries.
    """
    p = _check(percentile) - TOLERANCE
    q = 1.0 - p
    if h <= 0:
        return 1.0
    n = h + t
    log_top = (
        math.lgamma(n + 1)
        - math.lgamma(t + 1)
        - math.lgamma(h + 1)
        + t * math.log(q)
        + h * math.log(p)
    )
    return math.exp(log_top) * _relative_tail(n, t, math.log(p / q))


def _relative_tail(n: int, t: int, log_p_over_q: float) -> float:
    """``sum_{x<=t} term(x) / term(t)`` via term(x-1)/term(x) = x p / ((n-x+1) q)."""
    total, log_rel, x = 1.0, 0.0, t
    while x > 0:
        xs = np.arange(x, max(x - _CHUNK, 0), -1, dtype=np.float64)
        logs = log_rel + np.cumsum(np.log(xs) - np.log(n - xs + 1.0) + log_p_over_q)
        total += float(np.exp(logs).sum())
        log_rel, x = float(logs[-1]), x - xs.shape[0]
        if log_rel < _NEGLIGIBLE_LOG + math.log(total):
            break
    return total


def h_min(t: int, percentile: float) -> int:
    """Smallest ``h`` with ``odds(h, t) < 1 - c``: good queries needed with t over."""
    if t < 0:
        raise ConfigError(f"t must be >= 0 (got {t})")
    return _h_min(t, _check(percentile))


@functools.lru_cache(maxsize=1 << 16)
def _h_min(t: int, p: float) -> int:
    q = 1.0 - (p - TOLERANCE)
    # Below the binomial mean (h ~ t p / q) the odds are ~1/2 or more: search upward.
    lo = max(0, math.floor(t * (1.0 - q) / q))
    step = max(1, math.ceil(math.sqrt(t + 1) / q))
    hi = lo + step
    while odds(hi, t, p) >= _THRESHOLD:
        lo, step = hi, step * 2
        hi = lo + step
    # Invariant: odds(lo) >= threshold > odds(hi).
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if odds(mid, t, p) < _THRESHOLD:
            hi = mid
        else:
            lo = mid
    return hi


def min_queries_for(percentile: float) -> int:
    """Fewest queries an SS/MS percentile estimate needs: ``h_min(1) + 1`` (p90: 64)."""
    return h_min(1, percentile) + 1


def server_check(
    n_queries: int, n_overlatency: int, percentile: float
) -> tuple[bool, int]:
    """Server: ok iff ``n_queries >= h_min(t) + t``, and how many more queries it needs.

    ``n_overlatency`` = samples strictly over the target latency.
    """
    need = h_min(n_overlatency, percentile) + n_overlatency
    return n_queries >= need, max(0, need - n_queries)


def stream_estimate(
    sorted_latencies_ns: npt.NDArray[np.int64], percentile: float
) -> EarlyStoppingEstimate:
    """SingleStream / MultiStream: the early-stopping estimate of the percentile.

    ``t`` = largest ``i >= 1`` with ``n >= h_min(i) + i``; the estimate is
    ``sorted[n - t]``. LoadGen scans i = 2, 3, ... to the first failure; as
    ``h_min(i) + i`` strictly increases in ``i`` a binary search finds the same t.
    """
    p = _check(percentile)
    n = int(sorted_latencies_ns.shape[0])
    need = min_queries_for(p)
    if n < need:
        return EarlyStoppingEstimate(False, 0, 0, None, need)
    t = _largest_t(n, p)
    estimate = int(sorted_latencies_ns[n - t])
    return EarlyStoppingEstimate(True, t, t - 1, estimate, need)


def _largest_t(n: int, p: float) -> int:
    def fits(i: int) -> bool:
        return n >= _h_min(i, p) + i

    # fits(1) holds (n >= min queries); h_min(i) >= 0 means fits(n + 1) fails.
    lo, hi = 1, n + 1
    guess = max(2, math.floor(n * (1.0 - p)))
    if guess < hi and fits(guess):
        lo = guess
    elif guess < hi:
        hi = guess
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _check(percentile: float) -> float:
    if not 0.0 < percentile < 1.0:
        raise ConfigError(
            f"early-stopping percentile must be between 0 and 1 (got {percentile}); "
            "pass e.g. 0.9 or 0.99"
        )
    return float(percentile)
