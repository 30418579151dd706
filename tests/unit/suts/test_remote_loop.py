"""The closed loop over remote clients: slot shares, routing, and the coordinator's loop.

The clients are threads behind an in-memory transport that keep to the
``slots`` each submit carries, as ``RemoteAgent`` does: counts, orders and
bounds only, never rates.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from typing import Any

import numpy as np
import pytest

from infermeter.loadgen.closed_loop import ClosedLoopFeed
from infermeter.runs.load import LoadSpec, run_load
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.remote import RemoteClientSUT
from infermeter.suts.remote_agent import host_identity
from infermeter.suts.remote_loop import SlotShares

CONFIG = OpenAIConfig(url="http://127.0.0.1:9/v1", model="m")


class _Feed:
    """Just what ``SlotShares.of`` reads of a feed."""

    def __init__(self, k: int, spq: int = 1, extra: bool = True) -> None:
        self.max_in_flight, self.samples_per_query, self.allows_extra = k, spq, extra


def shares(k: int, clients: int, **kw: Any) -> SlotShares:
    feed: Any = _Feed(k, **kw)
    assert not isinstance(feed, ClosedLoopFeed)
    return SlotShares.of(feed, clients)


def test_slots_add_up_to_the_concurrency_and_queues_stay_small() -> None:
    s = shares(64, 3)
    assert s.slots == (22, 21, 21)
    assert s.caps == (27, 26, 26) and s.extra_samples == 15  # a quarter queued
    s = shares(8, 8)
    assert s.slots == (1,) * 8 and s.caps == (2,) * 8  # at least one
    ray = SlotShares.of(_Feed(64), 2, 0.5)  # type: ignore[arg-type]
    assert ray.slots == (32, 32) and ray.caps == (48, 48)


def test_no_queue_where_the_query_count_is_a_rule_or_slots_are_fewer_than_clients() -> (
    None
):
    multi = shares(1, 2, spq=8, extra=False)  # MultiStream: 8 samples a query
    assert multi.slots == multi.caps == (4, 4) and multi.extra_samples == 0
    few = shares(1, 2)  # concurrency 1 over 2 clients: each may take the one
    assert few.slots == few.caps == (1, 1) and few.extra_samples == 0


def test_routing_fills_the_client_with_most_room_and_takes_turns_on_ties() -> None:
    s = shares(4, 2)  # slots 2 + 1 queued each
    assert s.route(3, [0, 2]).tolist() == [0, 0, 1]  # room 3 and 1: then a tie
    one = shares(1, 2)
    owners = [int(one.route(1, [0, 0])[0]) for _ in range(6)]
    assert owners == [0, 1, 0, 1, 0, 1]


class SlotClients:
    """Clients that run at most ``slots`` samples at once, each for ``latency_s``."""

    kind = "worker"
    issue_ahead_ns = 2_000_000

    def __init__(self, n: int, latency_s: float = 0.0005) -> None:
        self.n = n
        self.latency_s = latency_s
        self.events: queue.Queue[tuple[int, list[Any]]] = queue.Queue()
        self.queues = [collections.deque[int]() for _ in range(n)]
        self.running = [0] * n
        self.peak_running = [0] * n
        self.peak_held = [0] * n
        self.slots_seen: list[set[int]] = [set() for _ in range(n)]
        self.sent: dict[int, int] = {}
        self.handovers = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(n)
        ]

    def start(self) -> list[dict[str, Any]]:
        for t in self.threads:
            t.start()
        # The same kernel clock: stamps need no correction (compared as they are).
        boot = host_identity()["boot_id"]
        return [{"host": "h", "pid": i, "boot_id": boot} for i in range(self.n)]

    def submit(
        self,
        client: int,
        ids: Any,
        indices: Any,
        scheduled: Any,
        wants: Any,
        slots: int = 0,
    ) -> None:
        if slots == 0:  # the engine's loop: an open-loop hand-over, sent at once
            self.handovers += 1
            slots = 1
        with self.lock:
            self.slots_seen[client].add(slots)
            self.queues[client].extend(ids.tolist())
            held = len(self.queues[client]) + self.running[client]
            self.peak_held[client] = max(self.peak_held[client], held)

    def _run(self, i: int) -> None:
        finishing: list[tuple[float, int]] = []
        while not self.stop.is_set():
            now = time.perf_counter()
            events: list[Any] = []
            with self.lock:
                for t, sid in [f for f in finishing if f[0] <= now]:
                    finishing.remove((t, sid))
                    self.running[i] -= 1
                    events.append(("c", sid, time.perf_counter_ns(), 3, None))
                slots = max(self.slots_seen[i], default=0)
                while self.queues[i] and self.running[i] < slots:
                    sid = self.queues[i].popleft()
                    self.running[i] += 1
                    self.peak_running[i] = max(self.peak_running[i], self.running[i])
                    self.sent[sid] = time.perf_counter_ns()
                    events.append(("i", np.array([sid]), self.sent[sid]))
                    finishing.append((now + self.latency_s, sid))
            if events:
                self.events.put((i, events))
            time.sleep(0.0001)

    def call(self, client: int, op: str) -> Any:
        if op == "now":
            return time.perf_counter_ns()
        if op == "report":
            stats = {"requests": 0, "completed": 0, "failed": 0}
            return {"ids": [], "sent": [], "stats": stats, "cpu_s": 0.0, "routes": None}
        return 0.0 if op == "cpu" else None

    def receive(self, timeout_s: float) -> list[tuple[int, list[Any]]]:
        try:
            return [self.events.get(timeout=timeout_s)]
        except queue.Empty:
            return []

    def close(self) -> None:
        self.stop.set()


@pytest.mark.parametrize(("clients", "k"), [(2, 8), (3, 2)])
def test_the_coordinators_loop_keeps_each_client_to_its_slots(
    clients: int, k: int
) -> None:
    transport = SlotClients(clients)
    with RemoteClientSUT(transport, CONFIG) as sut:
        result = run_load(sut, LoadSpec(concurrency=k, requests=300), sample_count=8)
        expected = SlotShares.of(_Feed(k), clients)  # type: ignore[arg-type]
    phase = result.phase
    assert result.metrics.completed == 300
    assert [max(s) for s in transport.slots_seen] == list(expected.slots)
    assert all(
        run <= slots
        for run, slots in zip(transport.peak_running, expected.slots, strict=True)
    )
    assert sum(transport.peak_running) >= min(k, clients)
    assert all(
        held <= cap
        for held, cap in zip(transport.peak_held, expected.caps, strict=True)
    )
    # Issue time and latency origin are each sample's real send, in order per client.
    n = phase.samples_issued
    sent = np.array([transport.sent[i] for i in range(n)], dtype=np.int64)
    assert np.array_equal(phase.records.issued_ns[:n], sent)
    assert np.array_equal(phase.query_origin_ns[:n], sent)


def test_the_engines_loop_remains_when_the_coordinator_declines() -> None:
    transport = SlotClients(2)
    with RemoteClientSUT(transport, CONFIG) as sut:
        sut.runs_closed_loop = False
        result = run_load(sut, LoadSpec(concurrency=2, requests=50), sample_count=8)
    assert result.metrics.completed == 50
    assert transport.handovers == 50  # one issue_query per query, none with slots
