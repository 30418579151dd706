"""Can the live simulator keep up in real time? Simulated seconds per CPU second.

Feeds a Poisson trace to ``perfmodel.live.LiveSimulator`` the way serve-sim
does (advance to each arrival, add it) and reports how much faster than real
time it runs, the steps per second and the peak number of requests in flight.
Rates: the published 8x H100 Server rate (v4.1-0043, 21,605.8 tok/s / 294.45
= 73.4 queries/s) and overloaded multiples of it, where thousands queue.

    .venv/bin/python benchmarks/perfmodel/live_sim.py [--requests 24576]
"""

from __future__ import annotations

import argparse
import math
import time

from infermeter.perfmodel.arrivals import workload_requests
from infermeter.perfmodel.live import LiveSimulator
from infermeter.perfmodel.specs import get_workload
from infermeter.perfmodel.systems import build_system

PUBLISHED_QPS = 21605.8 / 294.45


def one(qps: float, n: int) -> dict[str, float]:
    cfg = build_system("h100-sxm", 8, "llama2-70b")
    req = workload_requests(get_workload("llama2-70b"), qps, n, seed=0)
    live = LiveSimulator(cfg, expected_osl=math.ceil(req.osl.mean()))
    steps, peak = 0, 0
    start = time.process_time()
    for a, i, o in zip(
        req.arrival_ns.tolist(), req.isl.tolist(), req.osl.tolist(), strict=True
    ):
        steps += len(live.advance(a, inclusive=False))
        live.add(a, i, o)
        peak = max(peak, live.in_flight)
    steps += len(live.advance(1 << 62))
    cpu = time.process_time() - start
    simulated = max(live.timing(r)[2] for r in range(n)) / 1e9
    return {
        "qps": qps,
        "simulated_s": simulated,
        "cpu_s": cpu,
        "x_real_time": simulated / cpu,
        "steps_per_cpu_s": steps / cpu,
        "peak_in_flight": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=24_576)
    args = parser.parse_args()
    for factor in (1.0, 1.3, 2.0):
        r = one(PUBLISHED_QPS * factor, args.requests)
        print(
            f"{r['qps']:6.1f} q/s x{factor:.1f}: {r['simulated_s']:7.1f} simulated s "
            f"in {r['cpu_s']:5.2f} CPU s = {r['x_real_time']:6.1f}x real time, "
            f"{r['steps_per_cpu_s']:7.0f} steps/CPU s, "
            f"peak {r['peak_in_flight']:.0f} in flight"
        )


if __name__ == "__main__":
    main()
