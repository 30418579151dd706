"""Session routing against round-robin on a simulated 4-replica fleet, agentic load.

``serve-sim --replicas 4 --route session|round-robin`` (one process, a front
router on the first port) answers the same synthetic agentic run (the same
trajectories, two passes over them, seed and concurrency) by session, in
turn, and by session with salting off. Each replica keeps its own simulated
prefix cache, so a conversation's later turns find their earlier turns
cached only where the router kept the conversation together; without salts
the second pass also finds the first pass's prompts, which the rules forbid.
Prints, per row, the fleet's prefix hit rate (cached prompt tokens over prompt
tokens looked up, from the replicas' own counters) and TTFT p50 / p90 in
simulated milliseconds (client-measured real time times the time scale).
Simulated figures (infermeter performance model), not measurements.

    python benchmarks/client/agentic_routing.py
    python benchmarks/client/agentic_routing.py --trajectories 64 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from infermeter.runs.agentic import AgenticSettings
from infermeter.runs.agentic_metrics import agentic_metrics
from infermeter.servers.sim import SimConfig
from infermeter.servers.sim_fleet import SimFleetProcess
from infermeter.testing.agentic_http import replay
from infermeter.workloads.agentic.synth import TrajectoryShape, synthetic_trajectories

# Coding-agent-like turns: a long system prompt and tool outputs, short answers.
SHAPE = TrajectoryShape(
    client_turns=(4, 10),
    system_tokens=1500,
    user_tokens=(200, 600),
    tool_result_tokens=(200, 1200),
    output_tokens=(40, 120),
    delay_s=(0.0, 0.0),  # the comparison is about cache reuse, not pacing
)


def _one(route: str, salt: bool, args: argparse.Namespace) -> dict[str, Any]:
    data = synthetic_trajectories(args.trajectories, SHAPE, seed=args.seed)
    config = SimConfig(
        accelerator=args.accelerator, count=1, tp=1, model=args.model,
        time_scale=args.time_scale, replicas=args.replicas, route=route,
    )  # fmt: skip
    settings = AgenticSettings(
        concurrency=args.concurrency,
        seed=args.seed,
        inject_tool_delay=False,
        enable_salt=salt,
        num_trajectories=args.passes * args.trajectories,
    )
    fleet = SimFleetProcess(config)
    with fleet as urls:
        result = asyncio.run(replay(urls[0], args.model, data, settings))
        front = fleet.stats()[0]
    metrics = agentic_metrics(result)
    scale = args.time_scale
    return {
        "route": route if salt else f"{route}, no salt",
        "turns": metrics.turns_completed,
        "failed": metrics.turns_failed,
        "prefix_hit_rate": front["prefix_hit_rate"],
        "ttft_p50_ms": (metrics.ttft_p50_ms or 0.0) * scale,
        "ttft_p90_ms": (metrics.ttft_p90_ms or 0.0) * scale,
        "routed": front["routed"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trajectories", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--accelerator", default="h100-sxm")
    parser.add_argument("--model", default="llama3.1-8b")
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--passes", type=int, default=2, help="Over the dataset.")
    args = parser.parse_args()
    print(
        f"{args.trajectories} synthetic trajectories x {args.passes} passes, "
        f"concurrency {args.concurrency}, "
        f"{args.replicas} replicas of 1x {args.accelerator} {args.model} "
        f"(simulated, time scale {args.time_scale:g})"
    )
    head = f"{'route':21} {'turns':>6} {'hit rate':>9} {'TTFT p50':>9} {'TTFT p90':>9}"
    print(head + "  routed")
    for route, salt in (("session", True), ("round-robin", True), ("session", False)):
        row = _one(route, salt, args)
        print(
            f"{row['route']:21} {row['turns']:>6} {row['prefix_hit_rate']:>9.3f} "
            f"{row['ttft_p50_ms']:>7.1f}ms {row['ttft_p90_ms']:>7.1f}ms  {row['routed']}"
        )


if __name__ == "__main__":
    main()
