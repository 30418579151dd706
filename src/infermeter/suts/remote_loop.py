"""A closed loop over remote clients: each keeps its share of the slots, with a few queued.

The engine's feed (``loadgen/closed_loop.py``) is pumped by the coordinator's
receiver thread as completions arrive, so no engine thread sits between a
completion and the next query. What is left is the pipe (or Ray) round trip
to the client: hidden by letting each client hold a few samples more than
its share of the concurrency (``extra``). A client sends a held sample the
moment one of its own slots frees and stamps that moment as the sample's
issue time, so the concurrency at the endpoint stays the one asked for and
each latency counts from the real send. Where the query count itself is a
MLPerf rule (SingleStream, MultiStream), the feed refuses ``extra``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.closed_loop import ClosedLoopFeed

# A worker process holds a quarter of its slots again as queued samples (at least
# one): enough to cover a pipe round trip at thousands of requests a second, also
# when a busy machine delays the coordinator by a few requests' time; few enough
# that little is sent after a duration limit or a stop. A transport with slower
# round trips (Ray: milliseconds) sets its own ``queue_fraction``.
QUEUE_FRACTION = 0.25


class SlotShares:
    """Each client's slots (its share of the concurrency, in samples) and cap."""

    def __init__(self, slots: list[int], caps: list[int]) -> None:
        self.slots = tuple(slots)
        self.caps = tuple(caps)  # slots plus the samples it may hold queued
        self._turn = 0  # ties go round the clients: counts stay balanced

    @classmethod
    def of(
        cls, feed: ClosedLoopFeed, clients: int, fraction: float = QUEUE_FRACTION
    ) -> SlotShares:
        total = feed.max_in_flight * feed.samples_per_query
        if not feed.allows_extra or total < clients:
            # Nothing held: the feed keeps the total, routing keeps each client at
            # most at the even share, and every client takes its turn.
            even = -(-total // clients)
            return cls([even] * clients, [even] * clients)
        slots = [total // clients + (i < total % clients) for i in range(clients)]
        extra = [min(s, max(1, int(s * fraction))) for s in slots]
        return cls(slots, [s + e for s, e in zip(slots, extra, strict=True)])

    @property
    def extra_samples(self) -> int:
        """The samples the clients may hold beyond their slots, all together."""
        return max(0, sum(self.caps) - sum(self.slots))

    def route(self, n: int, outstanding: list[int]) -> npt.NDArray[np.int64]:
        """The client of each of ``n`` samples: the one with the most room each time."""
        room = [cap - held for cap, held in zip(self.caps, outstanding, strict=True)]
        clients = len(room)
        owner = np.empty(n, dtype=np.int64)
        for k in range(n):
            order = [(self._turn + j) % clients for j in range(clients)]
            best = max(order, key=room.__getitem__)
            owner[k] = best
            room[best] -= 1
            self._turn = best + 1
        return owner
