"""The p99-under-load figures of docs/notes/perfmodel-validation.md ("p99 under load"), re-measured.

1. Analytic capacity (``latency.tails``) against the serving simulator for one
   replica at k = 1: Llama 2 70B on one H200 (FP8) under the Interactive and the
   Server bounds, Llama 3.1 405B on 8 B200 (FP4) Interactive over four seeds,
   and a bare M/G/1 queue with the same prompt service times.
2. The long-prompt plan (200 users, 4,000-token prompts, 25 tok/s, 1 s TTFT on
   H200): the mean-step sizing (11 x TP1) against today's plan, simulated; and
   the TP4 plan that ties it at 40 H200, over five seeds at 1,200 and 3,000
   requests (a p99 over 1,200 requests swings with the seed).
3. "Llama 2 70B, 100 users at 30 tok/s" on H100 FP16 TP4, simulated.
4. Planned / published accelerators over the v5.1 Server and Interactive rows
   (needs ../shared), with the planner's rule and with the p99 capacity as a
   bare cap; and the published Interactive / Offline ratios of Llama 2 70B.

All figures are simulated or predicted (derived). Takes a few minutes.

    .venv/bin/python benchmarks/perfmodel/plan_p99.py
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from infermeter.perfmodel import planner
from infermeter.perfmodel.arrivals import ISL_SIGMA, workload_requests
from infermeter.perfmodel.latency import tails
from infermeter.perfmodel.plancheck import plan_published_row, simulate_option
from infermeter.perfmodel.planner import Option, Targets, plan_accelerator
from infermeter.perfmodel.roofline import Deployment, Efficiency
from infermeter.perfmodel.simulator import ServingConfig, simulate
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.systems import build_system
from infermeter.perfmodel.throughput import MAX_BATCH_PER_ACCELERATOR, TPOT_HEADROOM
from infermeter.perfmodel.verdict import judge_server

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "mlperf"
EFF = Efficiency()


def _dep(part: str, model: str, prec: str, tp: int) -> Deployment:
    acc = get_accelerator(part)
    return Deployment(
        acc,
        get_model(model),
        prec,
        tp,
        domain=min(acc.scaleup_domain, tp),
        max_batch=MAX_BATCH_PER_ACCELERATOR * tp,
    )


def _sim_p99(dep: Deployment, model: str, scen: str, tok_s: float, n: int, seed: int):
    wl = get_workload(model)
    ttft, tpot = wl.limits(scen) or (0.0, 0.0)
    res = simulate(
        ServingConfig(dep, EFF), workload_requests(wl, tok_s / wl.osl_mean, n, seed)
    )
    v = judge_server(res, ttft_ms=ttft, tpot_ms=tpot)
    return v.ttft_p99_ns / 1e6, v.tpot_p99_ns / 1e6


def capacity_vs_simulator() -> None:
    print("## 1. analytic capacity vs the simulator (k = 1, ms)")
    cases = [
        (
            "h200-sxm",
            "llama2-70b",
            "fp8",
            1,
            "Interactive",
            2500,
            (1,),
            (1.0, 1.25, 1.5),
        ),
        ("h200-sxm", "llama2-70b", "fp8", 1, "Server", 2500, (1,), (1.0, 1.25)),
        (
            "b200",
            "llama3.1-405b",
            "fp4",
            8,
            "Interactive",
            3000,
            (2, 3, 4, 5),
            (0.75, 1.0),
        ),
    ]
    for part, model, prec, tp, scen, n, seeds, loads in cases:
        dep, wl = _dep(part, model, prec, tp), get_workload(model)
        ttft, tpot = wl.limits(scen) or (0.0, 0.0)
        tl = tails(dep, EFF, wl, scen)
        cap, _ = tl.capacity(ttft / 1e3, tpot / 1e3)
        mean_step = tl.tokens_per_s[tl.step_s <= tpot / 1e3 * TPOT_HEADROOM].max()
        offline = tl.tokens_per_s.max()
        print(
            f"{model} {scen} {tp}x{part}: capacity {cap / offline:.2f} of Offline"
            f" (mean step alone {mean_step / offline:.2f}); model p99 at capacity"
            f" TTFT {tl.at_rate(cap)[0] * 1e3:.0f} TPOT {tl.at_rate(cap)[1] * 1e3:.1f}"
            f"; bounds {ttft:.0f} / {tpot:.0f}"
        )
        for load in loads:
            for seed in seeds:
                t99, p99 = _sim_p99(dep, model, scen, load * cap, n, seed)
                print(
                    f"   {load:.2f} x capacity, seed {seed}, {n} requests:"
                    f" simulated TTFT {t99:.0f} TPOT {p99:.1f}"
                )


def bare_mg1(rho: float, service_s: float, mean_isl: float, n: int = 300_000) -> float:
    """p99 of wait + own service of a FIFO M/G/1 queue, lognormal prompt lengths
    (the simulator's spread, clipped at 6x the mean like its draws)."""
    rng = np.random.default_rng(2)
    isl = rng.lognormal(math.log(mean_isl) - ISL_SIGMA**2 / 2, ISL_SIGMA, n)
    service = np.clip(np.round(isl), 2, 6 * mean_isl) / mean_isl * service_s
    arrivals = np.cumsum(rng.exponential(service.mean() / rho, n))
    done, waits = 0.0, np.empty(n)
    for i in range(n):
        start = max(arrivals[i], done)
        waits[i], done = start - arrivals[i], start + service[i]
    return float(np.percentile(waits + service, 99))


def long_prompt_plan() -> None:
    print("## 2. long-prompt plan (ms)")
    t = Targets(users=200, tokens_per_user=25, ttft_ms=1000, isl=4000, osl=300)
    opt = plan_accelerator("h200-sxm", "llama2-70b", t, precision="fp8")
    assert isinstance(opt, Option)
    old = dataclasses.replace(opt, tp=1, replicas=11, accelerators=11)
    for label, o, n in (("mean-step sizing", old, 2000), ("today's plan", opt, 3000)):
        sim = simulate_option(o, "llama2-70b", t, requests=n)
        assert sim is not None
        planned = (
            f"planned p99 TTFT {o.ttft_ms:.0f} TPOT {o.tpot_ms:.1f}; "
            if o is opt
            else ""
        )
        print(
            f"{label}: {o.replicas} x TP{o.tp} = {o.accelerators} H200; {planned}"
            f"simulated ({n} requests) TTFT {sim.ttft_p99_ms:.0f}"
            f" TPOT {sim.tpot_p99_ms:.1f}"
        )
    tied_tp4(opt, t)
    claim = Targets(users=100, tokens_per_user=30, ttft_ms=2000, isl=1000, osl=300)
    h100 = plan_accelerator("h100-sxm", "llama2-70b", claim, precision="fp16")
    assert isinstance(h100, Option)
    sim = simulate_option(h100, "llama2-70b", claim, requests=2000)
    assert sim is not None
    print(
        f"## 3. 100 users at 30 tok/s: {h100.accelerators} x H100 FP16 TP{h100.tp};"
        f" simulated TTFT {sim.ttft_p99_ms:.0f} TPOT {sim.tpot_p99_ms:.1f}"
    )
    # The counter-example test_planner checks (all 100 users on one TP4 replica),
    # and two replicas: the simulator does not apply the calibrated derate.
    for n in (1, 2):
        fewer = dataclasses.replace(h100, replicas=n, accelerators=n * h100.tp)
        got = simulate_option(fewer, "llama2-70b", claim, requests=1500)
        assert got is not None
        print(
            f"   {n} TP{h100.tp} replica(s) for all of them: simulated (1500 requests)"
            f" TTFT {got.ttft_p99_ms:.0f} TPOT {got.tpot_p99_ms:.1f}"
        )


def tied_tp4(opt: Option, t: Targets) -> None:
    """The TP4 plan that ties today's at 40 H200: the planner's p99 TTFT against the
    simulator's over seeds 1-5, at the test's 1,200 requests and at 3,000."""
    tp4 = dataclasses.replace(opt, tp=4, replicas=10, accelerators=40)
    cfg = build_system("h200-sxm", 4, "llama2-70b", precision="fp8", tp=4)
    wl = t.workload(get_workload("llama2-70b"))
    tl = tails(cfg.deployment, cfg.efficiency, wl, "Server")
    planned, _ = tl.at_rate(t.tokens_per_s / tp4.replicas)
    for n in (1200, 3000):
        got = []
        for seed in range(1, 6):
            sim = simulate_option(tp4, "llama2-70b", t, requests=n, seed=seed)
            assert sim is not None
            got.append(f"{sim.ttft_p99_ms:.0f}")
        print(
            f"tied plan 10 x TP4 = 40 H200: planned p99 TTFT {planned * 1e3:.0f}; "
            f"simulated ({n} requests, seeds 1-5) {' '.join(got)}"
        )


def against_published() -> None:
    from infermeter.perfmodel.calibrate import load_results

    if not (SHARED / "summary_results_v5.1.json").exists():
        print("## 4. skipped: ../shared/data/mlperf absent")
        return
    rows = [r for r in load_results(["v5.1"]).rows if r.scenario != "Offline"]

    def ratios(fit: str | None = None) -> np.ndarray:
        out = []
        for r in rows:
            got = plan_published_row(r, fit)
            out.append(
                got.accelerators / r.count if isinstance(got, Option) else np.nan
            )
        return np.asarray(out)

    rule = ratios()
    real = planner._p99_derated
    planner._p99_derated = lambda dep, eff, bench, calibrated, cap: min(calibrated, cap)
    try:
        bare = ratios()
    finally:
        planner._p99_derated = real
    v41 = ratios("v4.1")
    for label, x in (
        ("planner's rule", rule),
        ("p99 capacity as a bare cap", bare),
        ("planner's rule, v4.1-only fit", v41),
    ):
        lo, hi = np.nanpercentile(x, [5, 95])
        print(
            f"## 4. planned / published accelerators, {len(x)} v5.1 rows, {label}:"
            f" median {np.nanmedian(x):.2f} p90 {np.nanpercentile(x, 90):.2f}"
            f" (5th-95th {lo:.2f}-{hi:.2f}),"
            f" within 2x {int(np.sum(np.abs(np.log(x)) <= math.log(2)))}"
        )
    for r, x in zip(rows, v41, strict=True):
        if not abs(math.log(x)) <= math.log(2):  # NaN (infeasible) too
            print(f"   v4.1-only miss: {r.label}: {x:.2f}")
    by: dict[tuple[str, str, int, str], dict[str, float]] = {}
    for r in load_results(["v5.1"]).rows:
        if r.benchmark.startswith("llama2-70b"):
            key = (r.submitter, r.accelerator, r.count, r.stack)
            by.setdefault(key, {})[r.scenario] = r.tokens_per_s
    share = [v["Interactive"] / v["Offline"] for v in by.values()
             if "Interactive" in v and "Offline" in v and v.get("Offline")]  # fmt: skip
    nvidia = [
        v["Interactive"] / v["Offline"]
        for k, v in by.items()
        if "Interactive" in v and "Offline" in v and k[3] == "trt-llm"
    ]
    print(
        f"   published Llama 2 70B Interactive / Offline: all {min(share):.2f}-"
        f"{max(share):.2f}, TRT-LLM systems {min(nvidia):.2f}-{max(nvidia):.2f}"
    )


def main() -> None:
    capacity_vs_simulator()
    dep, wl = _dep("b200", "llama3.1-405b", "fp4", 8), get_workload("llama3.1-405b")
    tl = tails(dep, EFF, wl, "Interactive")
    _, batch = tl.capacity(4.5, 0.080)
    i = int(np.flatnonzero(tl.batch == batch)[0])
    rho, service = float(tl.prefill_load[i]), float(tl.prompt_s[i])
    print(
        f"   bare M/G/1, rho {rho:.2f}, service {service:.2f} s: p99 wait + service"
        f" {bare_mg1(rho, service, wl.isl_mean):.2f} s"
    )
    long_prompt_plan()
    against_published()


if __name__ == "__main__":
    main()
