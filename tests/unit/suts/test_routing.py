"""Routing policies over a fleet: pure, so every decision is checked exactly."""

from __future__ import annotations

import pytest

from infermeter.errors import ConfigError
from infermeter.suts.prompts import Prompt
from infermeter.suts.routing import (
    LeastOutstanding,
    PrefixAware,
    PrefixCache,
    RoundRobin,
    RouteKey,
    RoutingConfig,
    block_hashes,
    make_router,
    route_key,
)


def _words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def test_round_robin_cycles() -> None:
    router = RoundRobin(3)
    assert [router.pick(RouteKey()) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_least_outstanding_follows_completions() -> None:
    router = LeastOutstanding(3)
    assert sorted(router.pick(RouteKey()) for _ in range(3)) == [0, 1, 2]
    router.done(2, RouteKey())
    assert router.pick(RouteKey()) == 2  # the only replica with nothing in flight
    router.done(0, RouteKey())
    router.done(1, RouteKey())
    # Ties rotate: two idle replicas each get one of the next two requests.
    assert {router.pick(RouteKey()), router.pick(RouteKey())} == {0, 1}
    assert router.outstanding == [1, 1, 1]


def test_block_hashes_chain_and_drop_partial_block() -> None:
    a = block_hashes(list("abcdefgh"), 4)
    b = block_hashes(list("abcdxxxx"), 4)
    c = block_hashes(list("xxxxefgh"), 4)
    assert len(a) == 2 and a[0] == b[0] and a[1] != b[1]
    assert c[1] != a[1]  # same block after a different prefix: another hash
    assert block_hashes(list("abcdefg"), 4) == a[:1]


def test_route_key_reads_ids_text_or_messages() -> None:
    text = _words("w", 32)
    assert (
        route_key(Prompt(text=text), 16).blocks
        == route_key(Prompt(messages=[{"role": "user", "content": text}]), 16).blocks
    )
    assert len(route_key(Prompt(token_ids=list(range(40))), 16).blocks) == 2


def test_prefix_cache_is_a_bounded_lru() -> None:
    cache = PrefixCache(3)
    cache.touch([1, 2, 3])
    cache.touch([1])  # 1 is now the most recent; 2 the least
    cache.touch([4])
    assert len(cache) == 3
    assert cache.overlap([1, 2]) == 1  # 2 was evicted: the match stops there
    assert cache.overlap([3, 4, 1]) == 3


def test_prefix_routing_sends_a_shared_prefix_home() -> None:
    router = PrefixAware(4)
    system = _words("sys", 64)
    keys = [
        route_key(Prompt(text=f"{system} {_words(f'u{i}x', 8)}"), 16) for i in range(8)
    ]
    first = router.pick(keys[0])
    router.done(first, keys[0])
    # Idle fleet: every later request with the prefix goes where it is cached.
    for key in keys[1:]:
        replica = router.pick(key)
        assert replica == first
        router.done(replica, key)
    assert router.predicted_hit_blocks == 7 * 4


def test_prefix_routing_weighs_load_against_the_hit() -> None:
    router = PrefixAware(2, overlap_weight=1.0)
    key = route_key(Prompt(text=_words("p", 64)), 16)  # 4 blocks
    home = router.pick(key)
    # Keep the home replica busy: 4 in flight there, 4 blocks each.
    for _ in range(4):
        router.pick(RouteKey(blocks=(home * 1000 + 1, 2, 3, 4)))
    other = 1 - home
    router.active_blocks[other] = 0
    router.outstanding[other] = 0
    # Home: 0 new blocks + (16 + 4) active = 20; other: 4 new + 4 = 8 -> other.
    assert router.cost(home, key) > router.cost(other, key)
    assert router.pick(key) == other


def test_overlap_weight_zero_is_pure_load_balancing() -> None:
    router = PrefixAware(2, overlap_weight=0.0)
    key = route_key(Prompt(text=_words("p", 64)), 16)
    a = router.pick(key)
    assert router.pick(key) == 1 - a


@pytest.mark.parametrize(
    ("config", "match"),
    [
        (RoutingConfig(policy="random"), "Unknown routing policy"),
        (RoutingConfig(policy="prefix", block_size=0), "routing_block"),
    ],
)
def test_bad_config_is_one_line(config: RoutingConfig, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make_router(config, 2)


def test_make_router_by_name() -> None:
    assert isinstance(make_router(RoutingConfig("prefix"), 2), PrefixAware)
    assert isinstance(
        make_router(RoutingConfig("least-outstanding"), 2), LeastOutstanding
    )
    assert isinstance(make_router(RoutingConfig(), 2), RoundRobin)
