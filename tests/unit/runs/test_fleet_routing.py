"""Prefix-aware routing beats round-robin on a simulated fleet, in virtual time.

Four simulated replicas (2x H100, Llama 2 70B, TP2) with 16k-token prefix
caches; 16 system prompts of 2,048 tokens shared across users; Poisson
arrivals at 6 requests/s, the same for every policy. Virtual time makes the
outcome exact: the margins below are properties of the model, not of timing.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from infermeter.perfmodel.live import LiveSimulator
from infermeter.perfmodel.systems import build_system
from infermeter.runs.fleet_sim import FleetOutcome, FleetRequest, simulate_fleet
from infermeter.suts.routing import RoutingConfig, make_router
from infermeter.workloads.datasets.factory import synthetic_text
from infermeter.workloads.datasets.lengths import fixed
from infermeter.workloads.datasets.shapes import parse_prompt_shape

REPLICAS, RATE, REQUESTS, CACHE_TOKENS, OSL = 4, 6.0, 600, 16384, 64


def _requests() -> list[FleetRequest]:
    shape = parse_prompt_shape("shared-prefix:16:2048")
    source = synthetic_text(
        REQUESTS, shape, input_len=fixed(2048 + 128), output_len=fixed(OSL)
    )
    rng = np.random.default_rng(0)
    arrivals = np.cumsum(rng.exponential(1e9 / RATE, REQUESTS)).astype(np.int64)
    # Users of the 16 applications arrive in random order (in sample order,
    # round-robin over 4 replicas would partition the 16 prompts by luck).
    picks = rng.integers(0, REQUESTS, size=REQUESTS)
    return [
        FleetRequest(int(t), tuple((source.read(int(i)).prompt or "").split()), OSL)
        for i, t in zip(picks, arrivals, strict=True)
    ]


@cache
def _outcome(policy: str) -> FleetOutcome:
    config = build_system("h100-sxm", 2, "llama2-70b", tp=2)
    router = make_router(
        RoutingConfig(policy, cache_blocks=CACHE_TOKENS // 16), REPLICAS
    )
    return simulate_fleet(
        _requests(),
        router,
        lambda: LiveSimulator(
            config, expected_osl=OSL, prefix_cache_blocks=CACHE_TOKENS // 16
        ),
    )


def test_every_request_is_served_once() -> None:
    for policy in ("round-robin", "prefix"):
        out = _outcome(policy)
        assert out.replica.shape == (REQUESTS,)
        assert (out.ttft_ns > 0).all()
    assert np.bincount(_outcome("round-robin").replica).tolist() == [150] * 4


@pytest.mark.parametrize("policy", ["round-robin", "least-outstanding"])
def test_prefix_routing_hits_more_and_has_a_lower_ttft_p90(policy: str) -> None:
    other, prefix = _outcome(policy), _outcome("prefix")
    # Round-robin sends every system prompt to every replica: 16 prompts do
    # not fit a 16k-token cache, so they evict each other. Prefix routing
    # keeps each prompt on its home replica (four per replica fit).
    assert prefix.hit_rate > other.hit_rate + 0.3
    assert prefix.ttft_ms(90) < 0.5 * other.ttft_ms(90)
