"""Serving simulator: timings of simple cases by hand, routers, KV admission, variants."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import (
    constant_arrivals,
    make_requests,
    poisson_arrivals,
    trace_arrivals,
)
from infermeter.perfmodel.roofline import Deployment, Efficiency, step_time_s
from infermeter.perfmodel.simulator import ServingConfig, simulate
from infermeter.perfmodel.specs import get_accelerator, get_model

DEP = Deployment(get_accelerator("h100-sxm"), get_model("llama2-70b"), "fp8", 2)
EFF = Efficiency()


def _one(x: float) -> np.ndarray:
    return np.asarray([x], dtype=float)


def _step(decode: int, ctx: float, prefill: int = 0, pctx: float = 0.0) -> int:
    t = step_time_s(
        DEP,
        EFF,
        decode=_one(decode),
        context=_one(ctx),
        prefill=_one(prefill),
        prefill_context=_one(pctx),
    )
    return int(t[0] * 1e9)


def test_single_request_timings_follow_the_step_model() -> None:
    req = make_requests(np.asarray([0]), 100, 3)
    res = simulate(ServingConfig(DEP, EFF), req)
    prefill = _step(0, 0, 100, 50)
    assert res.ttft_ns[0] == pytest.approx(prefill, abs=2)
    decode = _step(1, 100) + _step(1, 101)
    assert res.latency_ns[0] == pytest.approx(prefill + decode, abs=4)
    assert res.tpot_ns[0] == (res.latency_ns[0] - res.ttft_ns[0]) // 2


def test_arrivals_are_seeded_and_shaped() -> None:
    a, b = poisson_arrivals(10.0, 1000, seed=3), poisson_arrivals(10.0, 1000, seed=3)
    assert np.array_equal(a, b) and a[-1] / 1e9 == pytest.approx(100, rel=0.1)
    assert constant_arrivals(4.0, 3).tolist() == [0, 250_000_000, 500_000_000]
    assert trace_arrivals([0.5, 0.1]).tolist() == [100_000_000, 500_000_000]
    with pytest.raises(ConfigError, match="must be > 0"):
        poisson_arrivals(0.0, 10, seed=1)


def test_round_robin_spreads_and_least_loaded_avoids_busy_replicas() -> None:
    n = 40
    req = make_requests(constant_arrivals(1000.0, n), 200, 50)
    rr = simulate(ServingConfig(DEP, EFF, replicas=4, router="round-robin"), req)
    single = simulate(ServingConfig(DEP, EFF, replicas=1), req)
    assert rr.latency_ns.mean() < single.latency_ns.mean()
    ll = simulate(ServingConfig(DEP, EFF, replicas=4, router="least-loaded"), req)
    assert ll.latency_ns.mean() <= rr.latency_ns.mean() * 1.05


def test_prefix_routing_reuses_cached_prompts() -> None:
    # 32 shared prompts, each sent by 4 consecutive requests, twice over. Round-robin
    # sends a group's 4 requests to 4 replicas (a cache miss on each); the prefix
    # router keeps a group on its home replica (one miss per group). A hit still
    # prefills the last 200 tokens (a step with kernel launches per layer). The
    # median request is a hit under the prefix router and a miss under round-robin.
    n = 256
    groups = (np.arange(n) // 4) % 32
    req = make_requests(
        constant_arrivals(20.0, n), 2000, 20, prefix_id=groups, prefix_len=1800
    )
    aware = simulate(ServingConfig(DEP, EFF, replicas=4, router="prefix"), req)
    blind = simulate(ServingConfig(DEP, EFF, replicas=4, router="round-robin"), req)
    assert np.median(aware.ttft_ns) < 0.6 * np.median(blind.ttft_ns)
    assert aware.ttft_ns.mean() < blind.ttft_ns.mean()
    no_prefix = make_requests(constant_arrivals(20.0, n), 2000, 20)
    plain = simulate(ServingConfig(DEP, EFF, replicas=4, router="prefix"), no_prefix)
    assert plain.ttft_ns.mean() > blind.ttft_ns.mean()


def test_kv_capacity_makes_requests_wait() -> None:
    small = Deployment(get_accelerator("h100-sxm"), get_model("llama2-70b"), "fp8", 1)
    cap = small.kv_capacity_tokens()
    per = cap // 3 - 10  # three fit at once, the fourth waits for a completion
    req = make_requests(np.zeros(4, dtype=np.int64), per - 100, 100)
    res = simulate(ServingConfig(small, EFF), req)
    assert res.first_token_ns[3] > res.completed_ns[:3].min()
    with pytest.raises(ConfigError, match=r"needs .* GB .* usable"):
        simulate(
            ServingConfig(small, EFF), make_requests(np.asarray([0]), cap + 10, 10)
        )


def test_disaggregated_pools_and_mtp_change_timings_as_expected() -> None:
    req = make_requests(constant_arrivals(8.0, 64), 1500, 200)
    mixed = simulate(ServingConfig(DEP, EFF, replicas=2), req)
    split = simulate(ServingConfig(DEP, EFF, disaggregated=(1, 1)), req)
    assert np.all(split.first_token_ns > 0) and np.all(split.completed_ns > 0)
    # Decode replicas never stall behind prompt chunks: steadier TPOT.
    assert split.tpot_ns.max() <= mixed.tpot_ns.max()
    mtp = simulate(
        ServingConfig(DEP, EFF, replicas=2, mtp_accept=1.8, mtp_draft=1), req
    )
    assert np.median(mtp.tpot_ns) < 0.8 * np.median(mixed.tpot_ns)


def test_bad_configs_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="Unknown router 'random'"):
        ServingConfig(DEP, EFF, router="random")
    with pytest.raises(ConfigError, match="Replicas must be >= 1"):
        ServingConfig(DEP, EFF, replicas=0)
    with pytest.raises(ConfigError, match="mtp_accept"):
        ServingConfig(DEP, EFF, mtp_accept=2.5, mtp_draft=1)
