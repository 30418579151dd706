"""Routing policies on a simulated fleet: prefix-cache hit rate and TTFT per policy.

Two views of one workload (16 system prompts of 2,048 tokens shared across
users, 128 tokens of each user's own, 64 output tokens) on 4 replicas of a
simulated 2x H100 SXM serving Llama 2 70B (TP2), each with a 16,384-token
prefix cache:

* ``--virtual``: in virtual time (runs/fleet_sim.py), exact and repeatable,
  with the prefix policy at overlap weights 1, 2 and 4.
* ``--multi-turn``: in virtual time, 201 conversations of 6 turns (256-token
  user messages, 128-token replies) sent turn by turn at --qps, 200,000-token
  prefix caches: each turn's prompt starts with the turn before.
* ``--http``: the real path. ``serve-sim --replicas 4`` in a child process,
  ``infermeter run`` (MLPerf Server, Poisson at --qps) over the four URLs,
  once per policy against a fresh fleet; hit rate from each replica's /stats.

Figures are simulated (derived), not measurements.

    .venv/bin/python benchmarks/perfmodel/fleet_routing.py --virtual --http --min-duration-s 60
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.loadgen.settings import Scenario
from infermeter.perfmodel.live import LiveSimulator
from infermeter.perfmodel.systems import build_system
from infermeter.runs.fleet_sim import FleetRequest, simulate_fleet
from infermeter.runs.request import RunRequest
from infermeter.runs.run import execute
from infermeter.servers.sim import SimConfig
from infermeter.servers.sim_fleet import SimFleetProcess
from infermeter.suts.routing import RoutingConfig, make_router
from infermeter.workloads.datasets.factory import DatasetOptions, synthetic_text
from infermeter.workloads.datasets.lengths import fixed
from infermeter.workloads.datasets.shapes import parse_prompt_shape

REPLICAS, GROUPS, PREFIX, USER, OSL, CACHE = 4, 16, 2048, 128, 64, 16384
SHAPE = f"shared-prefix:{GROUPS}:{PREFIX}"


def virtual(qps: float, requests: int) -> None:
    source = synthetic_text(
        requests,
        parse_prompt_shape(SHAPE),
        input_len=fixed(PREFIX + USER),
        output_len=fixed(OSL),
    )
    rng = np.random.default_rng(0)
    arrivals = np.cumsum(rng.exponential(1e9 / qps, requests)).astype(np.int64)
    picks = rng.integers(0, requests, size=requests)
    reqs = [
        FleetRequest(int(t), tuple((source.read(int(i)).prompt or "").split()), OSL)
        for i, t in zip(picks, arrivals, strict=True)
    ]
    config = build_system("h100-sxm", 2, "llama2-70b", tp=2)
    print(f"virtual time, {requests} requests, Poisson {qps:g}/s")
    print(
        "| policy | prefix-cache hit rate | TTFT p50 ms | TTFT p90 ms | requests per replica |"
    )
    print("|---|---|---|---|---|")
    for policy, weight in (
        ("round-robin", 1.0),
        ("least-outstanding", 1.0),
        ("prefix", 1.0),
        ("prefix", 2.0),
        ("prefix", 4.0),
    ):
        router = make_router(
            RoutingConfig(policy, cache_blocks=CACHE // 16, overlap_weight=weight),
            REPLICAS,
        )
        out = simulate_fleet(
            reqs,
            router,
            lambda: LiveSimulator(
                config, expected_osl=OSL, prefix_cache_blocks=CACHE // 16
            ),
        )
        name = f"prefix (weight {weight:g})" if policy == "prefix" else policy
        counts = " / ".join(
            str(c) for c in np.bincount(out.replica, minlength=REPLICAS)
        )
        print(
            f"| {name} | {out.hit_rate:.3f} | {out.ttft_ms(50):.1f} | "
            f"{out.ttft_ms(90):.1f} | {counts} |"
        )


def multi_turn(qps: float) -> None:
    turns, conversations, cache = 6, 201, 200_000
    source = synthetic_text(
        turns * conversations,
        parse_prompt_shape(f"multi-turn:{turns}"),
        input_len=fixed(256),
        output_len=fixed(128),
    )
    rng = np.random.default_rng(0)
    arrivals = np.cumsum(rng.exponential(1e9 / qps, len(source))).astype(np.int64)
    reqs = [
        FleetRequest(int(t), tuple((source.read(i).prompt or "").split()), 128)
        for i, t in enumerate(arrivals)
    ]
    config = build_system("h100-sxm", 2, "llama2-70b", tp=2)
    print(f"virtual time, multi-turn, {len(reqs)} requests, Poisson {qps:g}/s")
    print(
        "| policy | prefix-cache hit rate | TTFT p50 ms | TTFT p90 ms | requests per replica |"
    )
    print("|---|---|---|---|---|")
    for policy in ("round-robin", "least-outstanding", "prefix"):
        router = make_router(RoutingConfig(policy, cache_blocks=cache // 16), REPLICAS)
        out = simulate_fleet(
            reqs,
            router,
            lambda: LiveSimulator(
                config, expected_osl=128, prefix_cache_blocks=cache // 16
            ),
        )
        counts = " / ".join(
            str(c) for c in np.bincount(out.replica, minlength=REPLICAS)
        )
        print(
            f"| {policy} | {out.hit_rate:.3f} | {out.ttft_ms(50):.1f} | "
            f"{out.ttft_ms(90):.1f} | {counts} |"
        )


def http(qps: float, min_duration_s: float) -> None:
    config = SimConfig(
        count=2, tp=2, chunk_ms=500.0, prefix_cache_tokens=CACHE, replicas=REPLICAS
    )
    print(f"HTTP, MLPerf Server at {qps:g} QPS for {min_duration_s:g} s per policy")
    print(
        "| policy | prefix-cache hit rate | TTFT p50 ms | TTFT p90 ms "
        "| requests per replica | verdict |"
    )
    print("|---|---|---|---|---|---|")
    for policy in ("round-robin", "least-outstanding", "prefix"):
        fleet = SimFleetProcess(config)
        with tempfile.TemporaryDirectory() as tmp, fleet as urls:
            request = RunRequest(
                scenario=Scenario.SERVER,
                sut="openai",
                sut_options={
                    "url": ",".join(urls),
                    "model": "llama2-70b",
                    "routing": policy,
                    "routing_cache_blocks": str(CACHE // 16),
                },
                target_qps=qps,
                overrides={"min_duration_ms": int(min_duration_s * 1000)},
                dataset_options=DatasetOptions(
                    input_len=fixed(PREFIX + USER),
                    output_len=fixed(OSL),
                    shared_prefix_tokens=PREFIX,
                    num_prefixes=GROUPS,
                ),
                output_dir=Path(tmp) / "run",
                index=False,
            )
            report = execute(request)
            stats = fleet.stats()
        doc = report.document
        ttft = doc["metrics"]["ttft_ns"]
        rows = doc["fleet"]["replicas"]
        print(
            f"| {policy} | {_hit_rate(stats)} | {ttft['p50'] / 1e6:.1f} | "
            f"{ttft['p90'] / 1e6:.1f} | {' / '.join(str(r['requests']) for r in rows)} | "
            f"{doc['verdict']['result']} |"
        )


def _hit_rate(stats: list[dict[str, Any]]) -> str:
    hits = sum(s.get("prefix_hit_tokens", 0) for s in stats)
    queries = sum(s.get("prefix_query_tokens", 0) for s in stats)
    return f"{hits / queries:.3f}" if queries else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--virtual", action="store_true")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--multi-turn", action="store_true")
    parser.add_argument("--qps", type=float, default=6.0)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--min-duration-s", type=float, default=60.0)
    args = parser.parse_args()
    if args.virtual or not (args.http or args.multi_turn):
        virtual(args.qps, args.requests)
    if args.multi_turn:
        multi_turn(args.qps)
    if args.http:
        http(args.qps, args.min_duration_s)


if __name__ == "__main__":
    main()
