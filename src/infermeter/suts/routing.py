"""Client-side routing of requests over a fleet of replicas (one URL each).

Pure and synchronous, so it is unit-tested without a network: ``pick(key)``
chooses a replica for a request, ``done(replica, key)`` says it finished.

* ``round-robin``: replicas in turn.
* ``least-outstanding``: the replica with the fewest requests in flight.
* ``prefix``: KV-aware. A prompt is cut into blocks of ``block_size`` tokens;
  block ``i``'s hash chains the hashes of blocks ``0..i`` (a block is reusable
  only with everything before it, as in paged prefix caches). Each replica
  keeps a bounded LRU of the block hashes it was sent (the router's
  prediction of its KV cache: it never sees the server's cache). The cost of
  a replica is ``overlap_weight * new prefill blocks + active blocks``, with
  new prefill blocks = blocks of the prompt not in its LRU prefix and active
  blocks = blocks of requests in flight there plus this one, the cost model
  of KV-aware routers such as NVIDIA Dynamo's. The cheapest replica wins;
  ties go to fewer requests in flight, then the lower index. The default
  weight is 4 (Dynamo's is 1): computing a prompt block costs far more than
  holding one in a decoding batch, and with weight 1 a single extra request
  in flight outweighs a whole cached prefix (docs/endpoints.md has the
  simulated comparison of weights 1, 2 and 4).

With several client processes each one routes its own slice of the samples
with its own router: the predicted caches and loads are per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from infermeter.errors import ConfigError
from infermeter.perfmodel.prefix_cache import (
    DEFAULT_BLOCK_SIZE,
    PrefixCache,
    block_hashes,
)
from infermeter.suts.prompts import Prompt

POLICIES = ("round-robin", "least-outstanding", "prefix")
DEFAULT_CACHE_BLOCKS = 8192  # per replica: 131,072 tokens at 16 per block
DEFAULT_OVERLAP_WEIGHT = 4.0


@dataclass(frozen=True, slots=True)
class RouteKey:
    """What routing needs of a request: its chained prefix-block hashes."""

    blocks: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        """Blocks this request occupies (at least one)."""
        return max(1, len(self.blocks))


def prompt_tokens(prompt: Prompt) -> Sequence[object]:
    """The prompt as the client sees its tokens: ids, else whitespace words.

    Words stand in for the server's tokens: equal prefixes of words are equal
    prefixes of tokens, which is all a prefix match needs.
    """
    if prompt.token_ids is not None:
        return list(prompt.token_ids)
    if prompt.text is not None:
        return prompt.text.split()
    if prompt.messages:
        return " ".join(m.get("content", "") for m in prompt.messages).split()
    return []


def route_key(prompt: Prompt, block_size: int) -> RouteKey:
    return RouteKey(block_hashes(prompt_tokens(prompt), block_size))


class Router(Protocol):
    """Chooses a replica per request; told when each finishes."""

    replicas: int

    def pick(self, key: RouteKey) -> int:
        """The replica for a request with ``key`` (counted as in flight)."""
        ...

    def done(self, replica: int, key: RouteKey) -> None:
        """The request sent to ``replica`` finished (or failed)."""
        ...


class RoundRobin:
    def __init__(self, replicas: int) -> None:
        self.replicas = replicas
        self._next = 0

    def pick(self, key: RouteKey) -> int:
        choice = self._next
        self._next = (choice + 1) % self.replicas
        return choice

    def done(self, replica: int, key: RouteKey) -> None:
        """Round-robin ignores completions."""


class LeastOutstanding:
    """Fewest requests in flight; ties rotate so equal replicas share the load."""

    def __init__(self, replicas: int) -> None:
        self.replicas = replicas
        self.outstanding = [0] * replicas
        self._start = 0

    def pick(self, key: RouteKey) -> int:
        n = self.replicas
        best = self._start
        for offset in range(1, n):
            k = (self._start + offset) % n
            if self.outstanding[k] < self.outstanding[best]:
                best = k
        self._start = (best + 1) % n
        self.outstanding[best] += 1
        return best

    def done(self, replica: int, key: RouteKey) -> None:
        self.outstanding[replica] -= 1


class PrefixAware:
    """KV-aware routing: expected prefix hit against load (see the module doc)."""

    def __init__(
        self,
        replicas: int,
        *,
        cache_blocks: int = DEFAULT_CACHE_BLOCKS,
        overlap_weight: float = DEFAULT_OVERLAP_WEIGHT,
    ) -> None:
        self.replicas = replicas
        self.overlap_weight = overlap_weight
        self.caches = [PrefixCache(cache_blocks) for _ in range(replicas)]
        self.outstanding = [0] * replicas
        self.active_blocks = [0] * replicas
        self.predicted_hit_blocks = 0
        self.routed_blocks = 0

    def cost(self, replica: int, key: RouteKey) -> float:
        new = len(key.blocks) - self.caches[replica].overlap(key.blocks)
        active = self.active_blocks[replica] + key.size
        return self.overlap_weight * new + active

    def pick(self, key: RouteKey) -> int:
        best = min(
            range(self.replicas),
            key=lambda k: (self.cost(k, key), self.outstanding[k], k),
        )
        self.predicted_hit_blocks += self.caches[best].overlap(key.blocks)
        self.routed_blocks += len(key.blocks)
        self.caches[best].touch(key.blocks)
        self.outstanding[best] += 1
        self.active_blocks[best] += key.size
        return best

    def done(self, replica: int, key: RouteKey) -> None:
        self.outstanding[replica] -= 1
        self.active_blocks[replica] -= key.size


@dataclass(frozen=True, slots=True)
class RoutingConfig:
    """The policy and its knobs (``--routing`` and ``--sut-opt routing_*``)."""

    policy: str = "round-robin"
    block_size: int = DEFAULT_BLOCK_SIZE
    cache_blocks: int = DEFAULT_CACHE_BLOCKS
    overlap_weight: float = DEFAULT_OVERLAP_WEIGHT

    def validate(self) -> None:
        if self.policy not in POLICIES:
            raise ConfigError(
                f"Unknown routing policy {self.policy!r}. Known: {', '.join(POLICIES)}"
            )
        if self.block_size < 1 or self.cache_blocks < 1 or self.overlap_weight < 0:
            raise ConfigError(
                f"routing_block ({self.block_size}) and routing_cache_blocks "
                f"({self.cache_blocks}) must be >= 1 and routing_overlap_weight "
                f"({self.overlap_weight:g}) >= 0"
            )

    @property
    def needs_keys(self) -> bool:
        """Whether requests must be hashed (only the prefix policy reads keys)."""
        return self.policy == "prefix"


def make_router(config: RoutingConfig, replicas: int) -> Router:
    """The router of ``config.policy`` over ``replicas`` replicas."""
    config.validate()
    if replicas < 1:
        raise ConfigError(f"A fleet needs at least one replica (got {replicas})")
    if config.policy == "least-outstanding":
        return LeastOutstanding(replicas)
    if config.policy == "prefix":
        return PrefixAware(
            replicas,
            cache_blocks=config.cache_blocks,
            overlap_weight=config.overlap_weight,
        )
    return RoundRobin(replicas)


__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_CACHE_BLOCKS",
    "DEFAULT_OVERLAP_WEIGHT",
    "POLICIES",
    "LeastOutstanding",
    "PrefixAware",
    "PrefixCache",
    "RoundRobin",
    "RouteKey",
    "Router",
    "RoutingConfig",
    "block_hashes",
    "make_router",
    "prompt_tokens",
    "route_key",
]
