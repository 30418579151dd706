"""Incremental serving simulator for a real-time endpoint: add requests, advance time.

The same replicas, router and step model as ``perfmodel.simulator``, driven
step by step: ``add`` a request when it arrives, ``advance(now)`` runs every
replica step that starts by ``now`` and returns what those steps finish (first
tokens, completions, at the steps' end times). Work per step is O(batch), so a
server keeps up in real time with thousands of requests in flight.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import IntArray
from infermeter.perfmodel.prefix_cache import DEFAULT_BLOCK_SIZE, PrefixCache
from infermeter.perfmodel.replica import MODE_DECODE, MODE_MIXED, MODE_PREFILL, Replica
from infermeter.perfmodel.simulator import Router, ServingConfig, build_replicas
from infermeter.perfmodel.specs import get_workload
from infermeter.perfmodel.systems import build_system

_COLUMNS = ("arrival", "isl", "osl", "skip", "first", "done", "made")


@dataclass(frozen=True, slots=True)
class StepEvents:
    """What one replica step finished, all at ``end_ns`` (simulated time)."""

    end_ns: int
    first_token: IntArray
    completed: IntArray


class _Columns:
    """Per-request int64 columns that grow by doubling (request ids index them)."""

    def __init__(self, capacity: int) -> None:
        self.n = 0
        self.data = {name: np.full(capacity, -1, dtype=np.int64) for name in _COLUMNS}

    def append(self, arrival_ns: int, isl: int, osl: int) -> int:
        if self.n == self.data["arrival"].shape[0]:
            for name, col in self.data.items():
                grown = np.full(2 * col.shape[0], -1, dtype=np.int64)
                grown[: self.n] = col[: self.n]
                self.data[name] = grown
        rid = self.n
        for name, value in (
            ("arrival", arrival_ns),
            ("isl", isl),
            ("osl", osl),
            ("skip", 0),
            ("made", 0),
        ):
            self.data[name][rid] = value
        self.n += 1
        return rid

    def __getitem__(self, name: str) -> IntArray:
        return self.data[name]


class LiveSimulator:
    """One simulated system; not thread-safe (drive it from one thread or loop).

    ``expected_osl`` is the output length the scheduler reserves KV cache for
    (the batch simulator uses the trace's mean; live, the workload's mean).
    """

    def __init__(
        self,
        config: ServingConfig,
        *,
        expected_osl: int,
        capacity: int = 4096,
        prefix_cache_blocks: int = 0,
        block_size: int = DEFAULT_BLOCK_SIZE,
    ) -> None:
        if expected_osl < 1:
            raise ConfigError(f"expected_osl must be >= 1 (got {expected_osl}).")
        self.config = config
        self.expected_osl = expected_osl
        self.cols = _Columns(capacity)
        if config.disaggregated:
            self.front = self._make(MODE_PREFILL, config.disaggregated[0])
            self.back = self._make(MODE_DECODE, config.disaggregated[1])
        else:
            self.front, self.back = self._make(MODE_MIXED, config.replicas), []
        self.all = self.front + self.back
        # The batch simulator's router, so that routing decisions match it exactly.
        self.front_router = Router(self.front, config.router)
        self.back_router = Router(self.back, "least-loaded")
        self._steps: list[tuple[int, int]] = []  # (start ns, replica index)
        self._handoffs: list[tuple[int, int]] = []  # (ready ns, request id)
        self._in_heap = [False] * len(self.all)
        self._max_tokens = config.deployment.kv_capacity_tokens()
        self.in_flight = 0
        self.block_size = block_size
        self.prefix_caches = (
            [PrefixCache(prefix_cache_blocks) for _ in self.front]
            if prefix_cache_blocks > 0
            else []
        )
        self._prefilling: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.prefix_query_tokens = 0  # prompt tokens of requests given blocks
        self.prefix_hit_tokens = 0  # of which served from a prefix cache

    @classmethod
    def for_system(
        cls,
        accelerator: str,
        count: int,
        model: str,
        *,
        precision: str | None = None,
        tp: int | None = None,
        prefix_cache_tokens: int = -1,
    ) -> LiveSimulator:
        """Calibrated system from names, e.g. ``("h100-sxm", 8, "llama2-70b")``.

        ``prefix_cache_tokens`` per replica: -1 = its whole KV cache, 0 = none.
        """
        config = build_system(accelerator, count, model, precision=precision, tp=tp)
        expected = math.ceil(get_workload(config.deployment.model.key).osl_mean)
        if prefix_cache_tokens < 0:
            prefix_cache_tokens = config.deployment.kv_capacity_tokens()
        return cls(
            config,
            expected_osl=expected,
            prefix_cache_blocks=prefix_cache_tokens // DEFAULT_BLOCK_SIZE,
        )

    def _make(self, mode: str, count: int) -> list[Replica]:
        return build_replicas(self.config, mode, count)

    # -- requests ------------------------------------------------------------
    def add(
        self, arrival_ns: int, isl: int, osl: int, blocks: tuple[int, ...] = ()
    ) -> int:
        """Queue a request arriving at ``arrival_ns``; returns its id (0, 1, ...).

        ``blocks``: the prompt's chained block hashes, for the prefix caches.
        """
        if isl < 1 or osl < 1:
            raise ConfigError(
                f"A request needs >= 1 input and output token (got {isl}, {osl})."
            )
        if isl + self.expected_osl > self._max_tokens:
            raise ConfigError(
                f"A prompt of {isl} tokens plus {self.expected_osl} reserved output "
                f"tokens exceeds one replica's KV cache ({self._max_tokens} tokens); "
                "send a shorter prompt."
            )
        rid = self.cols.append(arrival_ns, isl, osl)
        k = self.front_router.pick(-1)
        if self.prefix_caches and blocks:
            self._lookup(rid, k, isl, blocks)
        self.front[k].waiting.append(rid)
        self._wake(k, arrival_ns)
        self.in_flight += 1
        return rid

    def _lookup(self, rid: int, k: int, isl: int, blocks: tuple[int, ...]) -> None:
        hit = self.prefix_caches[k].overlap(blocks) * self.block_size
        skip = min(hit, isl - 1)  # the last prompt token is always computed
        self.cols["skip"][rid] = skip
        self.prefix_query_tokens += isl
        self.prefix_hit_tokens += skip
        self._prefilling[rid] = (k, blocks)

    def _cache_prefilled(self, rids: IntArray) -> None:
        for rid in rids.tolist():
            entry = self._prefilling.pop(rid, None)
            if entry is not None:
                self.prefix_caches[entry[0]].touch(entry[1])

    @property
    def running(self) -> int:
        """Requests in a replica's batch."""
        return sum(int(r.ids.shape[0]) for r in self.all)

    @property
    def waiting(self) -> int:
        """Requests queued for admission (or for a decode replica)."""
        return sum(len(r.waiting) for r in self.all) + len(self._handoffs)

    @property
    def kv_usage(self) -> float:
        """Reserved KV cache over all replicas' capacity (0..1)."""
        capacity = sum(r.kv_capacity for r in self.all)
        return sum(r.kv_used for r in self.all) / capacity if capacity else 0.0

    def timing(self, rid: int) -> tuple[int, int, int]:
        """(arrival, first token, completion) ns of request ``rid``; -1 = not yet."""
        c = self.cols
        return int(c["arrival"][rid]), int(c["first"][rid]), int(c["done"][rid])

    def tokens_made(self, rid: int) -> int:
        """Output tokens request ``rid`` has by the last step run (at most its OSL)."""
        return int(min(self.cols["made"][rid], self.cols["osl"][rid]))

    # -- time ----------------------------------------------------------------
    def next_event_ns(self) -> int | None:
        """Start of the next replica step or handoff; None when idle."""
        times = [h[0][0] for h in (self._steps, self._handoffs) if h]
        return min(times) if times else None

    def advance(self, until_ns: int, *, inclusive: bool = True) -> list[StepEvents]:
        """Run every step and handoff due by ``until_ns``; what the steps finished.

        ``inclusive=False`` leaves events at exactly ``until_ns`` for later (the
        batch simulator handles an arrival before a step due at the same time).
        """
        out: list[StepEvents] = []
        while True:
            nxt = self.next_event_ns()
            if nxt is None or nxt > until_ns or (nxt == until_ns and not inclusive):
                return out
            if self._handoffs and self._handoffs[0][0] <= nxt:
                ready, rid = heapq.heappop(self._handoffs)
                k = self.back_router.pick(-1)
                self.back[k].waiting.append(rid)
                self._wake(len(self.front) + k, ready)
            else:
                events = self._step()
                if events is not None:
                    out.append(events)

    def _wake(self, index: int, t: int) -> None:
        if not self._in_heap[index]:
            self._in_heap[index] = True
            heapq.heappush(self._steps, (t, index))

    def _step(self) -> StepEvents | None:
        t, index = heapq.heappop(self._steps)
        self._in_heap[index] = False
        rep, c = self.all[index], self.cols
        rep.admit(c["isl"], c["osl"], c["skip"], self.expected_osl)
        if rep.ids.shape[0] == 0:
            return None  # nothing admitted: woken again by the next arrival
        out = rep.step(t)
        if self._prefilling and index < len(self.front):
            self._cache_prefilled(out.first_token)
            self._cache_prefilled(out.prefilled)
        c["first"][out.first_token] = out.end_ns
        c["done"][out.completed] = out.end_ns
        c["made"][out.first_token] = 1  # handed-off prefills leave the batch
        c["made"][rep.ids] = rep.made
        c["made"][out.completed] = c["osl"][out.completed]
        self.in_flight -= int(out.completed.shape[0])
        for rid in out.prefilled.tolist():
            ready = out.end_ns + self._transfer_ns(int(c["isl"][rid]))
            heapq.heappush(self._handoffs, (ready, rid))
        if rep.busy:
            self._wake(index, out.end_ns)
        return StepEvents(out.end_ns, out.first_token, out.completed)

    def _transfer_ns(self, tokens: int) -> int:
        dep = self.config.deployment
        link = dep.accelerator.scaleup_gbs * 1e9 / 2.0
        return int(tokens * dep.kv_bytes_per_token / link * 1e9)
