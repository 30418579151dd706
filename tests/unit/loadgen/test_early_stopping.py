"""Early stopping: the published figures of spec 2.4 and properties of h_min."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infermeter.errors import ConfigError
from infermeter.loadgen.early_stopping import (
    h_min,
    min_queries_for,
    odds,
    server_check,
    stream_estimate,
)

PERCENTILES = st.sampled_from([0.5, 0.9, 0.95, 0.97, 0.99])


def brute_odds(h: int, t: int, p: float) -> float:
    """Binomial CDF summed term by term (small n only)."""
    n = h + t
    return sum(math.comb(n, x) * (1 - p) ** x * p ** (n - x) for x in range(t + 1))


@pytest.mark.parametrize(
    ("percentile", "expected"),
    [(0.50, 11), (0.90, 64), (0.95, 130), (0.97, 219), (0.99, 662), (0.999, 6636)],
)
def test_min_queries_for(percentile: float, expected: int) -> None:
    assert min_queries_for(percentile) == expected


def test_h_min_at_zero_over_latency_is_the_closed_form() -> None:
    for p in (0.9, 0.99):
        assert h_min(0, p) == math.ceil(math.log(0.01) / math.log(p))
    assert (h_min(0, 0.99), h_min(0, 0.9)) == (459, 44)


def test_server_figures() -> None:
    assert server_check(193, 0, 0.99) == (False, 266)
    assert server_check(459, 0, 0.99) == (True, 0)
    assert server_check(12_571, 100, 0.99) == (True, 0)
    assert server_check(12_570, 100, 0.99) == (False, 1)
    assert server_check(107_569, 1000, 0.99) == (True, 0)
    assert server_check(107_568, 1000, 0.99) == (False, 1)


@pytest.mark.parametrize(
    ("n", "percentile", "t"),
    [(463_206, 0.90, 45_845), (10_000, 0.99, 77), (270_336, 0.99, 2_583)],
)
def test_stream_estimate_figures(n: int, percentile: float, t: int) -> None:
    latencies = np.arange(n, dtype=np.int64) * 10 + 1_000
    estimate = stream_estimate(latencies, percentile)
    assert estimate.ok
    assert (estimate.t, estimate.discard) == (t, t - 1)
    assert estimate.estimate_ns == int(latencies[n - t])
    assert estimate.min_queries == min_queries_for(percentile)


def test_stream_estimate_needs_the_minimum() -> None:
    short = stream_estimate(np.arange(63, dtype=np.int64), 0.9)
    assert not short.ok and short.estimate_ns is None and short.min_queries == 64
    enough = stream_estimate(np.arange(64, dtype=np.int64), 0.9)
    assert enough.ok and enough.t == 1 and enough.estimate_ns == 63


@pytest.mark.slow
def test_stream_estimate_for_millions_of_queries() -> None:
    # Speed is measured by benchmarks/engine/bench_early_stopping.py, not asserted here.
    estimate = stream_estimate(np.arange(5_000_000, dtype=np.int64), 0.9)
    assert estimate.ok and n_fits(5_000_000, estimate.t, 0.9)


def n_fits(n: int, t: int, p: float) -> bool:
    """``t`` is the largest i with ``n >= h_min(i) + i``."""
    return n >= h_min(t, p) + t and n < h_min(t + 1, p) + t + 1


def test_bad_percentile_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        min_queries_for(99.0)


@settings(max_examples=60, deadline=None)
@given(t=st.integers(0, 25), p=st.sampled_from([0.5, 0.9, 0.95]))
def test_h_min_is_the_smallest_h_under_the_threshold(t: int, p: float) -> None:
    h = h_min(t, p)
    assert brute_odds(h, t, p) < 0.01 <= brute_odds(h - 1, t, p)
    assert odds(h, t, p) == pytest.approx(brute_odds(h, t, p), rel=1e-9)


@settings(max_examples=80, deadline=None)
@given(t=st.integers(0, 20_000), p=PERCENTILES)
def test_h_min_is_monotone_in_t(t: int, p: float) -> None:
    assert h_min(t + 1, p) >= h_min(t, p)
    # so h_min(i) + i strictly increases: the binary search over i is valid
    assert h_min(t + 1, p) + t + 1 > h_min(t, p) + t


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 2_000_000), over=st.integers(0, 5_000), p=PERCENTILES)
def test_server_check_is_consistent_with_h_min(n: int, over: int, p: float) -> None:
    ok, more = server_check(n, over, p)
    need = h_min(over, p) + over
    assert ok == (n >= need)
    assert more == max(0, need - n)
    assert server_check(n + more, over, p) == (True, 0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(64, 300_000), p=st.sampled_from([0.9, 0.99]))
def test_stream_estimate_t_is_the_largest_fitting_i(n: int, p: float) -> None:
    estimate = stream_estimate(np.arange(n, dtype=np.int64), p)
    if n < min_queries_for(p):
        assert not estimate.ok
        return
    assert estimate.ok and n_fits(n, estimate.t, p)
    assert estimate.estimate_ns == n - estimate.t
