"""A fleet of simulated replicas behind a client-side router, in virtual time.

Each replica is a ``LiveSimulator`` with a prefix cache; requests arrive at
given times, the router (``suts.routing``) picks a replica and hears of each
completion when the simulated clock reaches it, as the HTTP client would.
No wall clock is involved, so the outcome of a policy is exact and repeatable:
what tests and ``benchmarks/perfmodel/fleet_routing.py`` compare policies on.
Figures are simulated (derived), never measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infermeter.perfmodel.live import LiveSimulator
from infermeter.perfmodel.prefix_cache import block_hashes
from infermeter.suts.routing import RouteKey, Router

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class FleetRequest:
    arrival_ns: int
    words: tuple[str, ...]
    output_tokens: int


@dataclass(frozen=True, slots=True)
class FleetOutcome:
    """Per request: replica, TTFT (ns); per fleet: prefix-cache tokens."""

    replica: I64
    ttft_ns: I64
    hit_tokens: int
    query_tokens: int

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.query_tokens if self.query_tokens else 0.0

    def ttft_ms(self, percentile: float) -> float:
        return float(np.percentile(self.ttft_ns, percentile, method="higher")) / 1e6


def simulate_fleet(
    requests: Sequence[FleetRequest],
    router: Router,
    make_replica: Callable[[], LiveSimulator],
) -> FleetOutcome:
    """Serve ``requests`` (in arrival order) on ``router.replicas`` fresh replicas."""
    sims = [make_replica() for _ in range(router.replicas)]
    owner: dict[tuple[int, int], tuple[int, RouteKey]] = {}  # (replica, rid) -> index
    rids = np.full(len(requests), -1, dtype=np.int64)
    replica = np.full(len(requests), -1, dtype=np.int64)

    def advance(until: int | None) -> None:
        for k, sim in enumerate(sims):
            for events in sim.advance(until if until is not None else 1 << 62):
                for rid in events.completed.tolist():
                    router.done(k, owner.pop((k, rid))[1])

    for i, req in enumerate(requests):
        advance(req.arrival_ns)
        blocks = block_hashes(req.words, sims[0].block_size)
        key = RouteKey(blocks)
        k = router.pick(key)
        rid = sims[k].add(req.arrival_ns, len(req.words), req.output_tokens, blocks)
        owner[(k, rid)] = (i, key)
        rids[i], replica[i] = rid, k
    while any(sim.next_event_ns() is not None for sim in sims):
        advance(None)
    ttft = np.asarray(
        [_ttft(sims[int(k)], int(r)) for k, r in zip(replica, rids, strict=True)],
        dtype=np.int64,
    )
    return FleetOutcome(
        replica=replica,
        ttft_ns=ttft,
        hit_tokens=sum(s.prefix_hit_tokens for s in sims),
        query_tokens=sum(s.prefix_query_tokens for s in sims),
    )


def _ttft(sim: LiveSimulator, rid: int) -> int:
    arrival, first, _ = sim.timing(rid)
    return first - arrival
