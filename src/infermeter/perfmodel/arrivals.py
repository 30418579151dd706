"""Simulated request streams: arrival times (Poisson, constant, trace) and token lengths.

All times are integer nanoseconds from the start of the run; every random draw
comes from a seeded ``numpy.random.Generator``, so a stream is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError
from infermeter.perfmodel.specs import Workload

IntArray = npt.NDArray[np.int64]
NS_PER_S = 1_000_000_000
# Spread of the token-length distributions (lognormal sigma); MLPerf datasets are
# long-tailed, and the p99 of TTFT/TPOT depends on the tail, not only on the mean.
ISL_SIGMA = 0.6
OSL_SIGMA = 0.7
PROMPT_SCV = math.exp(ISL_SIGMA**2) - 1.0  # squared cv of lognormal prompt lengths
Z99 = 2.326  # standard normal 99th percentile
Z99_EXPONENTIAL = 6.96  # the same over exponential output lengths (latency.py's doc)


def output_z(osl_cv: float) -> float:
    """Standard deviations of a query's time per token above the mean step at the
    p99 over queries: 2.33 for equal output lengths, 6.96 for exponential ones
    (short outputs average fewer steps), interpolated in the lengths' cv^2."""
    return Z99 + (Z99_EXPONENTIAL - Z99) * min(osl_cv**2, 1.0)


@dataclass(frozen=True, slots=True)
class Requests:
    """One row per request: arrival time, input and output tokens, optional prefix."""

    arrival_ns: IntArray
    isl: IntArray
    osl: IntArray
    prefix_id: IntArray
    prefix_len: IntArray

    def __len__(self) -> int:
        return int(self.arrival_ns.shape[0])


def poisson_arrivals(qps: float, n: int, seed: int) -> IntArray:
    """``n`` Poisson arrivals at ``qps`` (exponential gaps), first one at its gap."""
    _check_rate(qps, n)
    gaps = np.random.default_rng(seed).exponential(1.0 / qps, n)
    return np.round(np.cumsum(gaps) * NS_PER_S).astype(np.int64)


def constant_arrivals(qps: float, n: int) -> IntArray:
    """``n`` evenly spaced arrivals at ``qps``, the first at time 0."""
    _check_rate(qps, n)
    return np.round(np.arange(n) / qps * NS_PER_S).astype(np.int64)


def trace_arrivals(times_s: Sequence[float]) -> IntArray:
    """Arrivals replayed from a trace of seconds (sorted; must not be empty)."""
    arr = np.sort(np.asarray(times_s, dtype=float))
    if arr.size == 0 or arr[0] < 0:
        raise ConfigError("A trace needs at least one arrival time >= 0 s.")
    return np.round(arr * NS_PER_S).astype(np.int64)


def _check_rate(qps: float, n: int) -> None:
    if not qps > 0:
        raise ConfigError(f"Arrival rate must be > 0 queries/s (got {qps}).")
    if n < 1:
        raise ConfigError(f"Request count must be >= 1 (got {n}).")


def _lognormal(rng: np.random.Generator, mean: float, sigma: float, n: int) -> IntArray:
    # Choose mu so that the distribution's mean is ``mean``; clip the far tail.
    mu = np.log(mean) - sigma**2 / 2.0
    draw = rng.lognormal(mu, sigma, n)
    return np.clip(np.round(draw), 2, 6 * mean).astype(np.int64)


def workload_lengths(wl: Workload, n: int, seed: int) -> tuple[IntArray, IntArray]:
    """Input and output token counts with the workload's means and long tails."""
    rng = np.random.default_rng(seed + 1)
    return _lognormal(rng, wl.isl_mean, ISL_SIGMA, n), _lognormal(
        rng, wl.osl_mean, OSL_SIGMA, n
    )


def make_requests(
    arrival_ns: IntArray,
    isl: IntArray | int,
    osl: IntArray | int,
    *,
    prefix_id: IntArray | None = None,
    prefix_len: IntArray | int = 0,
) -> Requests:
    """Assemble a request stream; scalars broadcast to every request."""
    n = int(arrival_ns.shape[0])

    def col(x: IntArray | int) -> IntArray:
        return np.broadcast_to(np.asarray(x, dtype=np.int64), (n,)).copy()

    req = Requests(
        arrival_ns=np.asarray(arrival_ns, dtype=np.int64),
        isl=col(isl),
        osl=col(osl),
        prefix_id=col(-1) if prefix_id is None else col(prefix_id),
        prefix_len=col(prefix_len),
    )
    if np.any(req.osl < 1) or np.any(req.isl < 1):
        raise ConfigError("Every request needs >= 1 input and >= 1 output token.")
    if np.any(np.diff(req.arrival_ns) < 0):
        raise ConfigError("Arrival times must be sorted ascending.")
    return req


def workload_requests(wl: Workload, qps: float, n: int, seed: int) -> Requests:
    """A Server-like stream: Poisson arrivals at ``qps`` with the workload's lengths."""
    isl, osl = workload_lengths(wl, n, seed)
    return make_requests(poisson_arrivals(qps, n, seed), isl, osl)
