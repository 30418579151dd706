"""Time the serving simulator on a Llama 2 70B Server run, and judge it.

The run has the MLPerf sample count (24,576) or 180 s of arrivals if more: a
Server run lasts at least 600 s, and on 8 B200 a request takes about 40 s at
full batch, so 24,576 arrivals (60 s) end before an overload shows.

Each run's best of three in wall time and in CPU time (on a shared machine the
steadier figure).

Run: .venv/bin/python benchmarks/perfmodel/simulator_speed.py
Simulated (derived) figures; published rates are MLPerf v5.1 results with their IDs.
"""

from __future__ import annotations

import time

from infermeter.perfmodel.calibrate import leave_one_system_out, load_results
from infermeter.perfmodel.simulator import simulate_server
from infermeter.perfmodel.specs import get_workload
from infermeter.perfmodel.systems import build_system
from infermeter.perfmodel.verdict import judge_workload

N = 24_576
ARRIVAL_S = 180.0
WL = get_workload("llama2-70b")
PUBLISHED = [("5.1-0049", "h200-sxm", 33164.4), ("5.1-0069", "b200", 99123.0)]


def main() -> None:
    start = time.perf_counter()
    rows = load_results(["v4.1", "v5.1"])
    v = leave_one_system_out(rows)
    print(
        f"calibration ({len(v.predictions)} rows, leave-one-system-out): "
        f"{time.perf_counter() - start:.2f} s"
    )
    for rid, acc, tokens_s in PUBLISHED:
        system = build_system(acc, 8, "llama2-70b")
        for mult in (1.0, 1.3):
            qps = tokens_s / WL.osl_mean * mult
            n = max(N, int(qps * ARRIVAL_S))
            best = cpu = float("inf")
            for _ in range(3):
                start, start_cpu = time.perf_counter(), time.process_time()
                res = simulate_server(system, WL, qps, n, seed=1)
                best = min(best, time.perf_counter() - start)
                cpu = min(cpu, time.process_time() - start_cpu)
            v = judge_workload(res, WL)
            print(
                f"{rid} 8x{acc} TP{system.deployment.tp} at {mult:.1f}x published "
                f"({qps:.1f} QPS, {n:,} queries): {v.result}, "
                f"TTFT p99 {v.ttft_p99_ns / 1e6:,.0f} ms, "
                f"TPOT p99 {v.tpot_p99_ns / 1e6:.0f} ms; best of 3: {best:.2f} s "
                f"({cpu:.2f} CPU-s)"
            )
            if n > N:  # what the sample count alone would have judged
                short = judge_workload(simulate_server(system, WL, qps, N, seed=1), WL)
                print(
                    f"   the sample count alone ({N:,} queries): {short.result}, "
                    f"TTFT p99 {short.ttft_p99_ns / 1e6:,.0f} ms"
                )


if __name__ == "__main__":
    main()
