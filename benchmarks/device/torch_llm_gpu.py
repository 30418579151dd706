"""The torch_llm SUT on a GPU: Offline and Server runs through the native engine.

Run where a CUDA GPU is present (the CPU fallback works too, slowly):

    PYTHONPATH=src python3 benchmarks/device/torch_llm_gpu.py --device cuda --out /tmp/gpu

Builds a random-weight Llama-style model (performance only; no accuracy
meaning), runs llama2-70b-rule Offline and Server tests on synthetic prompts
and prints one JSON line per run: verdict, tokens/s, TTFT/TPOT p99, power.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from infermeter.loadgen.settings import Scenario
from infermeter.runs.request import RunRequest
from infermeter.runs.run import execute
from infermeter.workloads.datasets.factory import DatasetOptions
from infermeter.workloads.datasets.lengths import parse_length


def model_options(args: argparse.Namespace) -> dict[str, str]:
    return {
        "device": args.device,
        "hidden": str(args.hidden),
        "intermediate": str(args.hidden * 8 // 3),
        "layers": str(args.layers),
        "heads": str(args.heads),
        "kv_heads": str(max(1, args.heads // 4)),
        "batch": str(args.batch),
        "max_tokens": str(args.output_tokens),
    }


def one_run(
    args: argparse.Namespace, scenario: Scenario, qps: float
) -> dict[str, object]:
    request = RunRequest(
        benchmark="llama2-70b",
        scenario=scenario,
        sut="torch_llm",
        sut_options=model_options(args),
        target_qps=qps,
        overrides={
            "min_duration_ms": args.duration_ms,
            "min_query_count": args.samples,
        },
        dataset_options=DatasetOptions(
            samples=args.samples,
            input_len=parse_length(f"fixed:{args.input_tokens}"),
            output_len=parse_length(f"fixed:{args.output_tokens}"),
        ),
        output_dir=Path(args.out) / scenario.value,
        index=False,
    )
    start = time.perf_counter()
    report = execute(request)
    doc = report.document
    metrics = doc["metrics"]
    return {
        "scenario": scenario.value,
        "target_qps": qps,
        "verdict": doc["verdict"]["result"],
        "reasons": doc["verdict"]["reasons"],
        "tokens_per_second": metrics.get("tokens_per_second"),
        "samples_per_second": metrics.get("samples_per_second"),
        "ttft_p99_ms": (metrics.get("ttft_ns") or {}).get("p99", 0) / 1e6,
        "tpot_p99_ms": (metrics.get("tpot_ns") or {}).get("p99", 0) / 1e6,
        "gpu": doc["environment"]["gpu"],
        "power": doc.get("power"),
        "wall_s": round(time.perf_counter() - start, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--input-tokens", type=int, default=128)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--duration-ms", type=int, default=10_000)
    parser.add_argument("--server-qps", type=float, default=20.0)
    parser.add_argument("--out", default="torch_llm_gpu_runs")
    args = parser.parse_args()
    for scenario, qps in (
        (Scenario.OFFLINE, 100.0),
        (Scenario.SERVER, args.server_qps),
    ):
        print(json.dumps(one_run(args, scenario, qps)), flush=True)


if __name__ == "__main__":
    main()
