"""Discrete-event serving simulator: replicas behind a router, per-request token timings.

Events are arrivals, prefill-to-decode handoffs (disaggregated serving) and
replica steps; the earliest runs first. Outputs per request: TTFT, TPOT and
latency in integer ns (derived, simulated figures).
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import IntArray, Requests, workload_requests
from infermeter.perfmodel.replica import MODE_DECODE, MODE_MIXED, MODE_PREFILL, Replica
from infermeter.perfmodel.roofline import Deployment, Efficiency
from infermeter.perfmodel.specs import Workload

ROUTERS = ("round-robin", "least-loaded", "prefix")
PREFIX_SLACK = 8  # a prefix's home replica keeps it unless this much busier


@dataclass(frozen=True, slots=True)
class ServingConfig:
    """How a system serves: replicas of one deployment, a router and scheduler knobs.

    ``disaggregated = (p, d)`` splits the replicas into ``p`` prefill-only and
    ``d`` decode-only replicas (KV moves over the scale-up link).
    ``mtp_accept`` is the mean number of tokens accepted per decode step with
    ``mtp_draft`` drafted tokens verified per step (multi-token prediction).
    """

    deployment: Deployment
    efficiency: Efficiency = field(default_factory=Efficiency)
    replicas: int = 1
    router: str = "least-loaded"
    chunk_tokens: int = 2048
    disaggregated: tuple[int, int] | None = None
    mtp_accept: float = 1.0
    mtp_draft: int = 0

    def __post_init__(self) -> None:
        if self.router not in ROUTERS:
            raise ConfigError(
                f"Unknown router {self.router!r}. Known: {', '.join(ROUTERS)}."
            )
        if self.replicas < 1:
            raise ConfigError(f"Replicas must be >= 1 (got {self.replicas}).")
        if self.disaggregated is not None and min(self.disaggregated) < 1:
            raise ConfigError(
                f"Disaggregated pools need >= 1 prefill and >= 1 decode replica "
                f"(got {self.disaggregated})."
            )
        if self.mtp_accept < 1.0 or self.mtp_accept > 1 + self.mtp_draft:
            raise ConfigError(
                f"mtp_accept must be in [1, 1 + mtp_draft] (got {self.mtp_accept} "
                f"with mtp_draft={self.mtp_draft})."
            )

    @property
    def accelerators(self) -> int:
        n = sum(self.disaggregated) if self.disaggregated else self.replicas
        return n * self.deployment.tp


@dataclass(frozen=True, slots=True)
class SimResult:
    """Per-request timings in ns from run start (simulated); -1 = never happened."""

    arrival_ns: IntArray
    first_token_ns: IntArray
    completed_ns: IntArray
    n_tokens: IntArray

    @property
    def ttft_ns(self) -> IntArray:
        return self.first_token_ns - self.arrival_ns

    @property
    def latency_ns(self) -> IntArray:
        return self.completed_ns - self.arrival_ns

    @property
    def tpot_ns(self) -> IntArray:
        """``(latency - ttft) / (n_tokens - 1)`` as LoadGen computes it (integer ns)."""
        return (self.completed_ns - self.first_token_ns) // np.maximum(
            self.n_tokens - 1, 1
        )

    @property
    def duration_s(self) -> float:
        return float(self.completed_ns.max()) / 1e9

    @property
    def tokens_per_s(self) -> float:
        return float(self.n_tokens.sum()) / self.duration_s


class Router:
    def __init__(self, replicas: list[Replica], policy: str) -> None:
        self.replicas, self.policy = replicas, policy
        self._rr = itertools.count()
        self._home: dict[int, int] = {}

    def pick(self, prefix_id: int) -> int:
        if self.policy == "round-robin":
            return next(self._rr) % len(self.replicas)
        loads = [r.load for r in self.replicas]
        least = loads.index(min(loads))  # the first least loaded, as argmin picks
        if self.policy == "prefix" and prefix_id >= 0:
            home = self._home.get(prefix_id)
            if home is not None and loads[home] <= loads[least] + PREFIX_SLACK:
                return home
            self._home[prefix_id] = least
        return least


class _Run:
    """State of one simulation: the pools, the event heap and the outputs."""

    def __init__(self, cfg: ServingConfig, req: Requests) -> None:
        self.cfg, self.req = cfg, req
        n = len(req)
        self.first = np.full(n, -1, dtype=np.int64)
        self.done = np.full(n, -1, dtype=np.int64)
        self.skip = np.zeros(n, dtype=np.int64)
        self.expected_osl = int(np.ceil(req.osl.mean()))

        def make(mode: str, count: int) -> list[Replica]:
            return build_replicas(cfg, mode, count)

        if cfg.disaggregated:
            self.front = make(MODE_PREFILL, cfg.disaggregated[0])
            self.back = make(MODE_DECODE, cfg.disaggregated[1])
        else:
            self.front = make(MODE_MIXED, cfg.replicas)
            self.back = []
        self.all = self.front + self.back
        self.front_router = Router(self.front, cfg.router)
        self.back_router = Router(self.back, "least-loaded")
        self.steps: list[tuple[int, int]] = []  # (time, replica index) of busy replicas
        self.handoffs: list[tuple[int, int]] = []  # (ready time, request)
        self.in_heap = [False] * len(self.all)

    def _wake(self, index: int, t: int) -> None:
        if not self.in_heap[index]:
            self.in_heap[index] = True
            heapq.heappush(self.steps, (t, index))

    def arrive(self, rid: int, t: int) -> None:
        k = self.front_router.pick(int(self.req.prefix_id[rid]))
        rep = self.front[k]
        pid = int(self.req.prefix_id[rid])
        if pid >= 0:
            if pid in rep.cached_prefixes:
                self.skip[rid] = min(
                    int(self.req.prefix_len[rid]), int(self.req.isl[rid]) - 1
                )
            rep.cached_prefixes.add(pid)
        rep.waiting.append(rid)
        self._wake(k, t)

    def hand_over(self, rid: int, t: int) -> None:
        k = self.back_router.pick(-1)
        self.back[k].waiting.append(rid)
        self._wake(len(self.front) + k, t)

    def step(self) -> None:
        t, index = heapq.heappop(self.steps)
        self.in_heap[index] = False
        rep = self.all[index]
        rep.admit(self.req.isl, self.req.osl, self.skip, self.expected_osl)
        if rep.ids.shape[0] == 0:
            return  # nothing admitted: woken again by the next arrival or handoff
        out = rep.step(t)
        self.first[out.first_token] = out.end_ns
        self.done[out.completed] = out.end_ns
        for rid in out.prefilled.tolist():
            ready = out.end_ns + self._transfer_ns(int(self.req.isl[rid]))
            heapq.heappush(self.handoffs, (ready, rid))
        if rep.busy:
            self._wake(index, out.end_ns)

    def _transfer_ns(self, tokens: int) -> int:
        dep = self.cfg.deployment
        link = dep.accelerator.scaleup_gbs * 1e9 / 2.0
        return int(tokens * dep.kv_bytes_per_token / link * 1e9)


def _check_fits(cfg: ServingConfig, req: Requests) -> None:
    dep = cfg.deployment
    # The longest prompt plus the reserved output must fit one replica's KV cache,
    # or that request could never be admitted.
    dep.check_fits(int(req.isl.max() + np.ceil(req.osl.mean())))


def simulate(cfg: ServingConfig, req: Requests) -> SimResult:
    """Serve ``req`` on ``cfg``; every request completes (queues drain after arrivals)."""
    _check_fits(cfg, req)
    run = _Run(cfg, req)
    arrivals = req.arrival_ns.tolist()
    i, n = 0, len(arrivals)
    inf = float("inf")
    while i < n or run.steps or run.handoffs:
        t_arr = arrivals[i] if i < n else inf
        t_hand = run.handoffs[0][0] if run.handoffs else inf
        t_step = run.steps[0][0] if run.steps else inf
        if t_arr <= t_step and t_arr <= t_hand:
            run.arrive(i, arrivals[i])
            i += 1
        elif t_hand <= t_step:
            ready, rid = heapq.heappop(run.handoffs)
            run.hand_over(rid, ready)
        else:
            run.step()
    return SimResult(req.arrival_ns, run.first, run.done, req.osl.copy())


def simulate_server(
    cfg: ServingConfig, workload: Workload, qps: float, n: int, seed: int = 0
) -> SimResult:
    """A simulated Server run: ``n`` Poisson arrivals at ``qps`` with MLPerf-like lengths."""
    return simulate(cfg, workload_requests(workload, qps, n, seed))


def build_replicas(cfg: ServingConfig, mode: str, count: int) -> list[Replica]:
    """``count`` replicas of one serving configuration in ``mode`` (mixed/prefill/decode)."""
    return [
        Replica(
            cfg.deployment,
            cfg.efficiency,
            mode=mode,
            chunk_tokens=cfg.chunk_tokens,
            mtp_accept=cfg.mtp_accept,
            mtp_draft=cfg.mtp_draft,
        )
        for _ in range(count)
    ]
