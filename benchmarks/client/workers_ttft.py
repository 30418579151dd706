"""TTFT with --workers 2 against --workers 1 at low load: start-up stays out of the figures.

A timed mock server (fixed TTFT and inter-token gap) in its own process; a
Poisson load at a low rate, run alternately with one client process and with
two worker processes, ``--repeats`` times. Reports TTFT p50 and mean per
setting and the difference of medians. Before the fix, the workers' ~0.8 s
start-up was counted in TTFT (91.7 ms against 53.1 ms).

    python benchmarks/client/workers_ttft.py              # about 2 minutes

``--closed K``: a closed loop at concurrency K instead of the Poisson load,
each setting run twice per repeat, interleaved: with the loop on the
engine's issue thread (``engine``, before issue #38: with workers, every next
request waits for a coordinator -> worker round trip) and run by the SUT
(``sut``: on the event loop, or by the workers from their own share of the
slots). Reports TTFT p50 and each slot's idle time between a completion and
the next send (the hop itself).

    python benchmarks/client/workers_ttft.py --closed 4 --requests 1000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any

import numpy as np

from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.suts.http_factory import create_http_sut
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts


def one_point(
    url: str, workers: int, args: argparse.Namespace, loop: str = "sut"
) -> dict[str, Any]:
    """A fresh SUT (workers start here, untimed), then the measured load."""
    config = OpenAIConfig(url=url, model="mock-model", workers=workers)
    prompts = SyntheticPrompts(256, input_tokens=64, output_tokens=args.osl)
    with create_http_sut(config, prompts) as sut:
        sut.runs_closed_loop = loop == "sut"
        if args.closed:
            spec = LoadSpec(concurrency=args.closed, requests=args.requests)
        else:
            spec = LoadSpec(mode="rate", rate=args.rate, requests=args.requests, seed=1)
        result = run_load(sut, spec, sample_count=256)
    ttft = result.metrics.ttft_ns / 1e6
    row = {
        "workers": workers,
        "loop": loop,
        "completed": result.metrics.completed,
        "ttft_p50_ms": float(np.percentile(ttft, 50)),
        "ttft_mean_ms": float(ttft.mean()),
        "send_lateness_p99_ms": result.certification.send_lateness_ns.get("p99", 0)
        / 1e6,
    }
    if args.closed:
        rec, n = result.phase.records, result.phase.samples_issued
        issued, done = np.sort(rec.issued_ns[:n]), np.sort(rec.completed_ns[:n])
        gap = (issued[args.closed :] - done[: -args.closed]) / 1e6
        row["slot_gap_p50_ms"] = float(np.percentile(gap, 50))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--osl", type=int, default=8)
    parser.add_argument("--ttft-s", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--closed", type=int, default=0, help="a closed loop at this concurrency"
    )
    args = parser.parse_args()
    mock = MockConfig(mode="timed", ttft=f"const:{args.ttft_s}", itl="const:0.005")
    runs: list[dict[str, Any]] = []
    loops = ("engine", "sut") if args.closed else ("sut",)
    with MockProcess(mock) as url:
        for r in range(args.repeats):
            for workers in (1, 2):
                for loop in loops if r % 2 == 0 else loops[::-1]:
                    runs.append(one_point(url, workers, args, loop))
                    print(json.dumps(runs[-1]), flush=True)
    medians = {
        f"{w} {loop}": statistics.median(
            r["ttft_p50_ms"] for r in runs if r["workers"] == w and r["loop"] == loop
        )
        for w in (1, 2)
        for loop in loops
    }
    load = (
        f"closed loop, concurrency {args.closed}"
        if args.closed
        else (f"Poisson {args.rate:g}/s")
    )
    report = {
        "machine": os.uname().nodename,
        "cpus": os.cpu_count(),
        "load": f"{load}, {args.requests} requests, server TTFT {args.ttft_s * 1000:g} ms",
        "ttft_p50_ms_median": medians,
        "difference_ms": {
            loop: round(medians[f"2 {loop}"] - medians[f"1 {loop}"], 3)
            for loop in loops
        },
        "runs": runs,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
