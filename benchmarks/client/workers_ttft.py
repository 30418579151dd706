"""TTFT with --workers 2 against --workers 1 at low load: start-up stays out of the figures.

A timed mock server (fixed TTFT and inter-token gap) in its own process; a
Poisson load at a low rate, run alternately with one client process and with
two worker processes, ``--repeats`` times. Reports TTFT p50 and mean per
setting and the difference of medians. Before the fix, the workers' ~0.8 s
start-up was counted in TTFT (91.7 ms against 53.1 ms).

    python benchmarks/client/workers_ttft.py              # about 2 minutes
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


def one_point(url: str, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """A fresh SUT (workers start here, untimed), then the measured load."""
    config = OpenAIConfig(url=url, model="mock-model", workers=workers)
    prompts = SyntheticPrompts(256, input_tokens=64, output_tokens=args.osl)
    with create_http_sut(config, prompts) as sut:
        spec = LoadSpec(mode="rate", rate=args.rate, requests=args.requests, seed=1)
        result = run_load(sut, spec, sample_count=256)
    ttft = result.metrics.ttft_ns / 1e6
    return {
        "workers": workers,
        "completed": result.metrics.completed,
        "ttft_p50_ms": float(np.percentile(ttft, 50)),
        "ttft_mean_ms": float(ttft.mean()),
        "send_lateness_p99_ms": result.certification.send_lateness_ns.get("p99", 0)
        / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--osl", type=int, default=8)
    parser.add_argument("--ttft-s", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    mock = MockConfig(mode="timed", ttft=f"const:{args.ttft_s}", itl="const:0.005")
    runs: list[dict[str, Any]] = []
    with MockProcess(mock) as url:
        for _ in range(args.repeats):
            for workers in (1, 2):
                runs.append(one_point(url, workers, args))
                print(json.dumps(runs[-1]), flush=True)
    medians = {
        w: statistics.median(r["ttft_p50_ms"] for r in runs if r["workers"] == w)
        for w in (1, 2)
    }
    report = {
        "machine": os.uname().nodename,
        "cpus": os.cpu_count(),
        "load": f"Poisson {args.rate:g}/s, {args.requests} requests, server TTFT "
        f"{args.ttft_s * 1000:g} ms",
        "ttft_p50_ms_median": medians,
        "difference_ms": round(medians[2] - medians[1], 3),
        "runs": runs,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
