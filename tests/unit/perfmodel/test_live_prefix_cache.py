"""The live simulator's prefix cache: a cached prefix skips its prefill."""

from __future__ import annotations

from infermeter.perfmodel.live import LiveSimulator
from infermeter.perfmodel.prefix_cache import block_hashes
from infermeter.perfmodel.systems import build_system

S = 1_000_000_000


def _sim(cache_blocks: int) -> LiveSimulator:
    config = build_system("h100-sxm", 2, "llama2-70b", tp=2)
    return LiveSimulator(config, expected_osl=8, prefix_cache_blocks=cache_blocks)


def _ttft(sim: LiveSimulator, at: int, words: list[str]) -> int:
    rid = sim.add(at, len(words), 8, block_hashes(words, sim.block_size))
    sim.advance(at + 10 * S)
    arrival, first, _ = sim.timing(rid)
    return first - arrival


def test_second_request_skips_the_cached_prefix() -> None:
    sim = _sim(cache_blocks=1024)
    prompt = [f"w{i}" for i in range(2048)]
    cold = _ttft(sim, 0, prompt)
    warm = _ttft(sim, 20 * S, [*prompt[:2000], "other", "words"])
    assert sim.prefix_query_tokens == 2048 + 2002
    assert sim.prefix_hit_tokens == 2000 // 16 * 16  # whole blocks only
    assert warm < cold / 4


def test_lru_bound_evicts_the_oldest_prefix() -> None:
    sim = _sim(cache_blocks=128)  # 2,048 tokens: one prompt's blocks
    a = [f"a{i}" for i in range(2048)]
    b = [f"b{i}" for i in range(2048)]
    _ttft(sim, 0, a)
    _ttft(sim, 20 * S, b)  # evicts a
    _ttft(sim, 40 * S, a)
    assert sim.prefix_hit_tokens == 0


def test_no_cache_no_hits() -> None:
    sim = _sim(cache_blocks=0)
    prompt = [f"w{i}" for i in range(512)]
    assert _ttft(sim, 0, prompt) == _ttft(sim, 20 * S, prompt)
    assert sim.prefix_hit_tokens == 0
