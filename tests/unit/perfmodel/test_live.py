"""Live (incremental) simulator: same answers as the batch simulator, step by step."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import Requests, make_requests, workload_requests
from infermeter.perfmodel.live import LiveSimulator
from infermeter.perfmodel.simulator import ServingConfig, simulate
from infermeter.perfmodel.specs import get_workload
from infermeter.perfmodel.systems import build_system
from infermeter.perfmodel.verdict import percentile_ns


def _replay(cfg: ServingConfig, req: Requests) -> LiveSimulator:
    """Feed ``req`` to a live simulator as a server would: advance, then add."""
    live = LiveSimulator(cfg, expected_osl=math.ceil(req.osl.mean()), capacity=64)
    for a, i, o in zip(
        req.arrival_ns.tolist(), req.isl.tolist(), req.osl.tolist(), strict=True
    ):
        live.advance(a, inclusive=False)  # the batch simulator: arrivals first on ties
        live.add(a, i, o)
    live.advance(1 << 62)
    return live


def _columns(live: LiveSimulator, n: int) -> tuple[np.ndarray, np.ndarray]:
    timings = [live.timing(rid) for rid in range(n)]
    return (
        np.asarray([t[1] for t in timings], dtype=np.int64),
        np.asarray([t[2] for t in timings], dtype=np.int64),
    )


def test_poisson_trace_agrees_with_the_batch_simulator() -> None:
    cfg = build_system("h100-sxm", 8, "llama2-70b")
    # The published 8x H100 Server rate (v4.1-0043: 21,605.8 tok/s / 294.45).
    req = workload_requests(get_workload("llama2-70b"), 73.4, 3000, seed=5)
    batch = simulate(cfg, req)
    live = _replay(cfg, req)
    first, done = _columns(live, len(req))
    n_tokens = req.osl
    ttft = first - req.arrival_ns
    tpot = (done - first) // np.maximum(n_tokens - 1, 1)
    for ours, theirs in ((ttft, batch.ttft_ns), (tpot, batch.tpot_ns)):
        for p in (0.5, 0.99):
            assert percentile_ns(ours, p) == pytest.approx(
                percentile_ns(theirs, p), rel=0.02
            )
    # Same event order, same step model: in fact identical per request.
    assert np.array_equal(first, batch.first_token_ns)
    assert np.array_equal(done, batch.completed_ns)
    assert live.in_flight == 0 and live.next_event_ns() is None


def test_disaggregated_pools_agree_too() -> None:
    cfg = dataclasses.replace(
        build_system("h200", 8, "llama2-70b", tp=2), disaggregated=(1, 3)
    )
    req = workload_requests(get_workload("llama2-70b"), 30.0, 400, seed=2)
    batch = simulate(cfg, req)
    first, done = _columns(_replay(cfg, req), len(req))
    assert np.array_equal(first, batch.first_token_ns)
    assert np.array_equal(done, batch.completed_ns)


def test_progress_and_events_step_by_step() -> None:
    live = LiveSimulator.for_system("h100-sxm", 2, "llama2-70b", tp=2)
    rid = live.add(0, 400, 50)
    assert live.next_event_ns() == 0 and live.tokens_made(rid) == 0
    seen_first, made = -1, []
    while live.timing(rid)[2] < 0:
        nxt = live.next_event_ns()
        assert nxt is not None
        for events in live.advance(nxt):
            assert events.end_ns > nxt
            if rid in events.first_token.tolist():
                seen_first = events.end_ns
        made.append(live.tokens_made(rid))
    arrival, first, done = live.timing(rid)
    assert arrival == 0 and seen_first == first and 0 < first < done
    assert made == sorted(made) and made[-1] == 50
    assert live.in_flight == 0


def test_a_later_arrival_slows_the_request_in_flight() -> None:
    def finish(extra: int) -> int:
        live = LiveSimulator.for_system("h100-sxm", 2, "llama2-70b", tp=2)
        live.add(0, 300, 200)
        live.advance(10_000_000, inclusive=False)
        for _ in range(extra):
            live.add(10_000_000, 3000, 200)
        live.advance(1 << 62)
        return live.timing(0)[2]

    assert finish(64) > finish(0)


def test_bad_requests_say_what_is_wrong() -> None:
    live = LiveSimulator.for_system("h100-sxm", 8, "llama2-70b")
    with pytest.raises(ConfigError, match="needs >= 1 input and output token"):
        live.add(0, 0, 10)
    with pytest.raises(ConfigError, match=r"exceeds one replica's KV cache \(\d+"):
        live.add(0, 10**7, 10)
    with pytest.raises(ConfigError, match="expected_osl must be >= 1"):
        LiveSimulator(live.config, expected_osl=0)


def test_columns_grow_past_their_capacity() -> None:
    cfg = build_system("h100-sxm", 8, "llama2-70b")
    req = make_requests(np.arange(100, dtype=np.int64) * 1_000_000, 100, 20)
    live = _replay(cfg, req)
    first, done = _columns(live, 100)
    assert np.all(first > req.arrival_ns) and np.all(done > first)
