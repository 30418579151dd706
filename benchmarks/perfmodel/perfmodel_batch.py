"""The batch under a TPOT bound: the 40-point ladder against the continuous batch,
and the prefill token budget serve-sim's systems get (docs/notes/perfmodel-validation.md,
"Continuous batch under the TPOT bound").

1. The ladder's spacing (``b_max ** (1 / 39)``) at a few KV caps, then a sweep of
   ``TPOT_HEADROOM`` from 0.6 to 0.8 in 81 steps on 8x H100 Llama 2 70B
   Interactive (FP8): the largest step between neighbouring values and the
   whole sweep's gain, on the ladder alone (``_REFINE = 0``) and continuous.
2. 8x H200 Mixtral Server (FP8, the shipped fit): every replica shape's
   tokens/s, batch and prefill tokens a step carries (``batch * ISL / OSL``),
   the shape ``build_system`` picks and its token budget; then the simulated
   Server verdict at 1.0x and 1.3x the published rate of result 5.1-0049
   (60,955.1 tokens/s) with the simulator's default 2,048 tokens a step and with
   the budget.

No ../shared needed. Derived figures; the published rate is an MLPerf result.

    .venv/bin/python benchmarks/perfmodel/perfmodel_batch.py
"""

from __future__ import annotations

import dataclasses

import numpy as np

from infermeter.perfmodel import throughput
from infermeter.perfmodel.calibrate import efficiency_for
from infermeter.perfmodel.latency import CHUNK_TOKENS
from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.simulator import ServingConfig, simulate_server
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.systems import build_system
from infermeter.perfmodel.throughput import (
    SystemSpec,
    deployments,
    replica_throughput,
    throughput_grid,
)
from infermeter.perfmodel.verdict import judge_workload

PUBLISHED = ("5.1-0049", 60955.1)  # 8x H200 Mixtral Server, tokens/s
SERVER_ARRIVAL_S = 180.0  # seconds of arrivals: long enough for an overload to show


def _sweep() -> np.ndarray:
    spec = SystemSpec(get_accelerator("h100-sxm"), 8, get_model("llama2-70b"), "fp8")
    wl = get_workload("llama2-70b")
    out = []
    for headroom in np.linspace(0.6, 0.8, 81):
        throughput.TPOT_HEADROOM = float(headroom)
        grid = throughput_grid(spec, wl, "Interactive", Efficiency(), np.ones(1))
        out.append(float(grid[0]))
    return np.asarray(out)


def ladder_sweep() -> None:
    print("## 1. the batch ladder and a TPOT headroom sweep")
    for b_max in (100, 1000, 16384):
        gap = b_max ** (1 / (throughput._BATCH_POINTS - 1)) - 1
        print(
            f"   KV cap {b_max:>6,} sequences: ladder batches {gap * 100:.0f} % apart"
        )
    shipped = throughput.TPOT_HEADROOM, throughput._REFINE
    for label, refine in (("ladder 40", 0), ("continuous", shipped[1])):
        throughput._REFINE = refine
        thr = _sweep()
        step = (thr[1:] / thr[:-1]).max() - 1
        print(
            f"   {label:<10} 8x h100-sxm llama2-70b Interactive, headroom 0.6-0.8: "
            f"largest step +{step * 100:.1f} %, whole sweep +{(thr[-1] / thr[0] - 1) * 100:.1f} %"
        )
    throughput.TPOT_HEADROOM, throughput._REFINE = shipped


def _verdict(cfg: ServingConfig, tokens_s: float) -> str:
    wl = get_workload("mixtral-8x7b")
    qps = tokens_s / wl.osl_mean
    n = max(wl.samples, int(qps * SERVER_ARRIVAL_S))
    v = judge_workload(simulate_server(cfg, wl, qps, n, seed=1), wl)
    ttft, tpot = v.ttft_p99_ns / 1e6, v.tpot_p99_ns / 1e6
    return f"{'VALID' if v.valid else 'INVALID'} (TTFT p99 {ttft:,.0f} ms, TPOT p99 {tpot:.1f} ms)"


def token_budget() -> None:
    print("## 2. 8x h200-sxm mixtral-8x7b Server: replica shapes and the token budget")
    wl = get_workload("mixtral-8x7b")
    eff = efficiency_for("h200-sxm", "fp8", benchmark=wl.key)
    spec = SystemSpec(get_accelerator("h200-sxm"), 8, get_model("mixtral-8x7b"), "fp8")
    for dep in deployments(spec):
        thr, batch, step, _ = replica_throughput(dep, wl, "Server", eff)
        print(
            f"   TP{dep.tp}{' EP' if dep.ep else '   '}: {8 // dep.tp * thr:>9,.0f} tokens/s, "
            f"batch {batch:>5,}, step {step * 1e3:.1f} ms, "
            f"prefill {batch * wl.isl_mean / wl.osl_mean:>7,.0f} tokens a step"
        )
    built = build_system("h200-sxm", 8, "mixtral-8x7b")
    dep = built.deployment
    print(
        f"   build_system: {built.replicas} x TP{dep.tp}{' EP' if dep.ep else ''}, "
        f"token budget {built.chunk_tokens:,} a step"
    )
    result_id, published = PUBLISHED
    default = dataclasses.replace(built, chunk_tokens=CHUNK_TOKENS)
    for label, cfg in (("default 2,048", default), ("budget", built)):
        for k in (1.0, 1.3):
            verdict = _verdict(cfg, k * published)
            print(f"   {label:<13} {k:.1f}x {result_id}'s rate: {verdict}")


def main() -> None:
    ladder_sweep()
    token_budget()


if __name__ == "__main__":
    main()
