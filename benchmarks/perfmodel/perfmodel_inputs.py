"""Figures docs/notes/perfmodel-validation.md quotes about the model's inputs, re-derived.

1. DeepSeek-R1's output spread: a lognormal through the reference outputs'
   median (2,194) and p90 (9,477), capped at 32,768 like the dataset, against
   the data's mean (4,043) and samples at the cap (48 of 4,388); its cv is the
   shipped ``osl_cv``.
2. The calibrated speed factors (shipped fit of v4.1 + v5.1) that the docs
   quote, with what they make of the part's peaks (compute 0.6 k, memory 0.9 k),
   and Llama 2 70B's calibrated Interactive derate. Run it at an older commit
   for that commit's factors.
3. Where prefill/decode pools of whole replicas beat aggregated serving in the
   physics (speed 1) over the published v4.1 + v5.1 rows (needs ../shared), and
   the per-GPU ratio of the GB200 NVL72 and 8x B200 Llama 3.1 405B Interactive
   rows.
4. DeepSeek-R1 at batch 1 on 8 B200 in the physics, and a plan at a TPOT tighter
   than its rows' (60 users at 50 tok/s on B200): as shipped, and with its
   benchmark and MoE effects on compute efficiency alone (a what-if: the
   planner's efficiency swapped, as plan_p99.py swaps its p99 rule).

    .venv/bin/python benchmarks/perfmodel/perfmodel_inputs.py
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.perfmodel import planner, plannotes
from infermeter.perfmodel.calibrate import (
    efficiency_for,
    load_coefficients,
    load_results,
)
from infermeter.perfmodel.fit import physics_grid, speed_features
from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import SystemSpec, deployments, steady_state

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "mlperf"
ONE = np.asarray([1.0])
PLANNER_EFFICIENCY = "efficiency_for"  # the planner's name for it, swapped in section 4

MEDIAN, P90, CAP, SAMPLES = 2194.0, 9476.7, 32768.0, 4388
SPEEDS = [
    ("h200-sxm", "trt-llm", "fp8", "llama2-70b"),
    ("h100-sxm", "trt-llm", "fp16", "llama2-70b"),
    ("h100-sxm", "trt-llm", "fp8", "llama2-70b"),
    ("b200", "trt-llm", "fp4", "llama2-70b"),
    ("b200", "trt-llm", "fp4", "deepseek-r1"),
    ("mi325x", "vllm", "fp8", "llama2-70b"),  # its published rows' stack
    ("mi325x", "trt-llm", "fp8", "llama2-70b"),  # what plans took before usual_stack
]


def deepseek_spread(n: int = 4_000_000) -> None:
    sigma = math.log(P90 / MEDIAN) / 1.2815516  # z of the 90th percentile
    x = np.minimum(np.random.default_rng(1).lognormal(math.log(MEDIAN), sigma, n), CAP)
    print(
        f"## 1. DeepSeek-R1 outputs: lognormal sigma {sigma:.3f} capped at {CAP:,.0f}:"
        f" mean {x.mean():,.0f} (data 4,043), {np.mean(x >= CAP) * SAMPLES:.0f} of"
        f" {SAMPLES:,} at the cap (data 48), cv {x.std() / x.mean():.2f}"
        f" (shipped osl_cv {get_workload('deepseek-r1').osl_cv})"
    )


def speed_factors() -> None:
    coef, base = load_coefficients(), Efficiency()
    print(f"## 2. speed factors k ({coef.label})")
    for part, stack, prec, bench in SPEEDS:
        k = math.exp(coef.log_speed(speed_features(part, stack, prec, bench)))
        print(
            f"   {part} {stack} {prec} {bench}: k {k:.2f} (compute {base.compute * k:.2f}"
            f", memory {base.memory * k:.2f} of peak)"
        )
    derate = efficiency_for(
        "h100-sxm", "fp8", benchmark="llama2-70b", scenario="Interactive"
    ).server
    print(f"   llama2-70b Interactive derate (TRT-LLM): {derate:.2f}")


def pools() -> None:
    if not (SHARED / "summary_results_v5.1.json").exists():
        print("## 3. skipped: ../shared MLPerf files are absent")
        return
    rows = load_results(["v4.1", "v5.1"]).rows
    gains: dict[str, list[tuple[float, str]]] = defaultdict(list)
    totals: dict[str, int] = defaultdict(int)
    for r in rows:
        totals[r.scenario] += 1
        gain = float(
            physics_grid(r, ONE)[0] / physics_grid(r, ONE, disaggregated=False)[0]
        )
        if gain > 1.001:
            gains[r.scenario].append((gain, f"{r.benchmark} {r.count}x{r.accelerator}"))
    print("## 3. prefill/decode pools beat aggregated serving (physics, speed 1)")
    for scen in sorted(totals):
        won = sorted(gains[scen])
        lo, hi = (won[0][0], won[-1][0]) if won else (1.0, 1.0)
        print(f"   {scen}: {len(won)} of {totals[scen]} rows, by {lo:.2f}-{hi:.2f}x")
        for gain, label in sorted(set(won), reverse=True)[:8]:
            print(f"      {gain:.2f}x {label}")
    per_gpu = defaultdict(list)
    for r in rows:
        if r.benchmark.startswith("llama3.1-405b") and r.scenario == "Interactive":
            per_gpu[f"{r.count}x{r.accelerator}"].append(r.tokens_per_s / r.count)
    gb, b = per_gpu["72xgb200"], per_gpu["8xb200"]
    print(
        f"   405B Interactive per GPU: 72x GB200 {statistics.median(gb):.1f},"
        f" 8x B200 median {statistics.median(b):.1f} ({len(b)} rows):"
        f" {statistics.median(gb) / statistics.median(b):.2f}x"
    )


def _compute_side(accelerator: str, precision: str, **kw: Any) -> Efficiency:
    """The planner's efficiency with the benchmark's own (and MoE) speed effects on
    compute efficiency alone: memory runs at the part, stack and precision speed."""
    eff = efficiency_for(accelerator, precision, **kw)
    coef = kw.get("coefficients") or load_coefficients()
    own = plannotes.workload_speed(coef, kw.get("benchmark", "llama2-70b"))
    return dataclasses.replace(eff, memory=eff.memory / own)


def deepseek_small_batches() -> None:
    spec = SystemSpec(get_accelerator("b200"), 8, get_model("deepseek-r1"), "fp4")
    dep = next(d for d in deployments(spec) if d.tp == 8 and d.ep)
    _, step, _ = steady_state(dep, Efficiency(), get_workload("deepseek-r1"), "Offline")
    print(
        f"## 4. deepseek-r1, 8 x B200 FP4, TP8 expert parallel, batch 1 (speed 1):"
        f" step {step[0] * 1e3:.1f} ms, {1 / step[0]:.0f} tokens/s per user"
    )
    t = planner.Targets(users=60, tokens_per_user=50, ttft_ms=2000, isl=804, osl=4043)
    real = getattr(planner, PLANNER_EFFICIENCY)
    for label, eff in (
        ("as shipped", real),
        ("benchmark and MoE effects on compute alone", _compute_side),
    ):
        setattr(planner, PLANNER_EFFICIENCY, eff)
        try:
            opt = planner.plan_accelerator("b200", "deepseek-r1", t)
        finally:
            setattr(planner, PLANNER_EFFICIENCY, real)
        assert isinstance(opt, planner.Option)
        print(
            f"   60 users at 50 tok/s on B200, {label}: {opt.accelerators} B200"
            f" ({opt.replicas} x TP{opt.tp}, {opt.batch_per_replica} per replica)"
        )


if __name__ == "__main__":
    deepseek_spread()
    speed_factors()
    pools()
    deepseek_small_batches()
