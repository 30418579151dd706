"""Null-SUT throughput: infermeter.compat.mlperf_loadgen against the official wheel, one run.

The same harness (completes every sample inside the issue callback with a
4-byte response, trace off) runs each case in a fresh process on each module:
Server at several rates (the highest VALID one counts) and Offline.

Run: .venv/bin/python benchmarks/engine/compat_null_sut.py [--rates 100000,200000,400000,800000]
     [--duration-ms 2000] [--offline-samples 1000000]
"""

from __future__ import annotations

import argparse
import array
import importlib
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODULES = {"official": "mlperf_loadgen", "compat": "infermeter.compat.mlperf_loadgen"}


def child(
    module: str, scenario: str, value: float, duration_ms: int, outdir: str
) -> None:
    """One run in this process; prints one JSON line."""
    lg: Any = importlib.import_module(MODULES[module])
    payload = array.array("B", b"\x01\x02\x03\x04")
    address, size = payload.buffer_info()

    def issue(samples: list[Any]) -> None:
        lg.QuerySamplesComplete(
            [lg.QuerySampleResponse(s.id, address, size) for s in samples]
        )

    ts = lg.TestSettings()
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms = duration_ms
    ts.qsl_rng_seed, ts.sample_index_rng_seed = 2085463073848966840, 2747215439041700203
    ts.schedule_rng_seed = 16159082839903944936
    if scenario == "Server":
        ts.scenario = lg.TestScenario.Server
        ts.server_target_qps = value
        ts.server_target_latency_ns = 100_000_000
    else:
        ts.scenario = lg.TestScenario.Offline
        ts.min_query_count = int(value)
    ls = lg.LogSettings()
    ls.log_output.outdir = outdir
    ls.enable_trace = False
    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(1024, 1024, lambda i: None, lambda i: None)
    start = time.perf_counter()
    lg.StartTestWithLogSettings(sut, qsl, ts, ls)
    wall = time.perf_counter() - start
    text = (Path(outdir) / "mlperf_log_summary.txt").read_text()
    rate = re.search(
        r"(?:Completed samples per second\s*|Samples per second): ([\d.e+]+)", text
    )
    result = re.search(r"Result is : (\S+)", text)
    print(
        json.dumps(
            {
                "module": module,
                "scenario": scenario,
                "value": value,
                "wall_s": round(wall, 3),
                "result": result.group(1) if result else None,
                "samples_per_second": float(rate.group(1)) if rate else None,
            }
        ),
        flush=True,
    )


def run_one(
    module: str, scenario: str, value: float, duration_ms: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as outdir:
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                module,
                scenario,
                str(value),
                str(duration_ms),
                outdir,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    if proc.returncode != 0:
        return {
            "module": module,
            "scenario": scenario,
            "value": value,
            "result": f"crashed ({proc.returncode})",
            "samples_per_second": None,
        }
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return row


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        module, scenario, value, duration, outdir = sys.argv[2:7]
        child(module, scenario, float(value), int(duration), outdir)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="100000,200000,400000,800000")
    parser.add_argument("--duration-ms", type=int, default=2000)
    parser.add_argument("--offline-samples", type=int, default=1_000_000)
    args = parser.parse_args()
    best: dict[str, float] = {"official": 0.0, "compat": 0.0}
    for rate in [float(r) for r in args.rates.split(",")]:
        for module in MODULES:  # alternate, so both see the same machine load
            row = run_one(module, "Server", rate, args.duration_ms)
            print(json.dumps(row), flush=True)
            if row["result"] == "VALID":
                best[module] = max(best[module], rate)
    offline = {}
    for module in MODULES:
        # min_duration 0: 1M samples can finish under 500 ms, which is INVALID.
        row = run_one(module, "Offline", args.offline_samples, 0)
        print(json.dumps(row), flush=True)
        offline[module] = row["samples_per_second"] or 0.0
    print(
        f"Server max VALID QPS: official {best['official']:,.0f}, compat "
        f"{best['compat']:,.0f}, ratio {best['compat'] / max(best['official'], 1):.2f}"
    )
    print(
        f"Offline samples/s:    official {offline['official']:,.0f}, compat "
        f"{offline['compat']:,.0f}, ratio "
        f"{offline['compat'] / max(offline['official'], 1):.2f}"
    )


if __name__ == "__main__":
    main()
