"""Steady-state throughput: prefill/decode pools split into whole replicas."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from infermeter.perfmodel import throughput
from infermeter.perfmodel.roofline import Deployment, Efficiency
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import (
    TTFT_P99_PROMPT,
    TTFT_QUEUE,
    SystemSpec,
    best_config,
    deployments,
    prefill_load_limit,
    prefill_rate,
    replica_throughput,
    throughput_grid,
)

ONE = np.asarray([1.0])
EFF = Efficiency()


def _grid(
    part: str, count: int, bench: str, prec: str, scen: str, split: bool
) -> float:
    spec = SystemSpec(get_accelerator(part), count, get_model(bench), prec)
    wl = get_workload(bench)
    return float(throughput_grid(spec, wl, scen, EFF, ONE, disaggregated=split)[0])


def _ideal_per_accelerator(
    part: str, count: int, bench: str, prec: str, scen: str
) -> float:
    """Pools in the exact balancing ratio (a fraction of a replica allowed), the
    best replica shape of ``count`` accelerators, per accelerator."""
    spec = SystemSpec(get_accelerator(part), count, get_model(bench), prec)
    wl = get_workload(bench)
    return max(
        replica_throughput(dep, wl, scen, EFF, disaggregated=True)[0] / dep.tp
        for dep in deployments(spec)
    )


def test_pools_win_only_in_whole_replicas() -> None:
    # Llama 2 70B Interactive on H200: decode-only steps hold more sequences
    # under 40 ms, so pools beat aggregated serving on a board of 8 replicas;
    # split into whole replicas they stay under the ideal fractional split of
    # the same shapes, and two replicas (only 1:1) gain less than eight.
    args = ("h200-sxm", "llama2-70b", "fp8", "Interactive")
    per_replica = {}
    for n in (2, 8, 64):
        agg = _grid("h200-sxm", n, "llama2-70b", "fp8", "Interactive", False)
        best = _grid("h200-sxm", n, "llama2-70b", "fp8", "Interactive", True)
        assert best >= agg
        per_replica[n] = best / n
        ideal = _ideal_per_accelerator(args[0], n, *args[1:])
        assert per_replica[n] <= ideal * (1 + 1e-9)
    assert per_replica[2] < per_replica[8] <= per_replica[64]
    assert per_replica[8] > _grid(*args[:1], 8, *args[1:], False) / 8 * 1.1
    assert per_replica[64] > 0.97 * ideal


def test_long_prompts_at_a_tight_tpot_favour_pools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Aggregated decode steps also carry the prompts that arrive meanwhile: with
    # Llama 3.1 405B's 9,400-token prompts that spreads the p99 TPOT, and under
    # Interactive's 80 ms the pools (decode steps with no prefill) win on 8 B200,
    # by 1.32x. Without the spread they win by less (1.10x: their decode steps
    # still carry no prefill); Offline they never do.
    args = ("b200", 8, "llama3.1-405b", "fp4")

    def gain(scenario: str) -> float:
        return _grid(*args, scenario, True) / _grid(*args, scenario, False)

    with_spread = gain("Interactive")
    assert with_spread > 1.2
    assert gain("Offline") == 1.0
    monkeypatch.setattr(throughput, "TPOT_SPREAD", 0.0)
    assert 1.0 <= gain("Interactive") < with_spread - 0.1


def test_the_ttft_bound_caps_the_prefill_load_where_the_p99_prompt_just_fits() -> None:
    service = np.asarray([0.1, 0.2, 0.5, 1.0, 2.0])
    rho = prefill_load_limit(service, 4.5)
    assert np.all(np.diff(rho) < 0)  # slower prefill, less load allowed
    # At the limit the p99 TTFT (own prefill plus the mean queueing wait) is the bound.
    ttft = service * (TTFT_P99_PROMPT + TTFT_QUEUE * rho / (1 - rho))
    assert ttft[:4] == pytest.approx(np.full(4, 4.5))
    # A p99 prompt alone over the bound: a small share, falling with the overshoot.
    assert rho[-1] < 1e-3
    assert prefill_load_limit(np.asarray([4.0]), 4.5)[0] < rho[-1]


def _server_vs_loose_ttft(part: str, bench: str, prec: str) -> float:
    spec = SystemSpec(get_accelerator(part), 8, get_model(bench), prec)
    wl = get_workload(bench)
    loose = dataclasses.replace(wl, ttft_ms=1e9)
    tight = throughput_grid(spec, wl, "Server", EFF, ONE)[0]
    return float(tight / throughput_grid(spec, loose, "Server", EFF, ONE)[0])


def test_the_ttft_bound_binds_long_prompts_not_short_ones() -> None:
    # Llama 3.1 405B's 9,400-token prompts take about a second to prefill on 8
    # H200 (FP8): the 6 s p99 TTFT caps how much prefill a replica may queue
    # (0.955 of the loose bound's rate at speed 1; the TPOT bound takes most of the
    # rest). Blackwell's FP4 prefills several times faster, Llama 2 70B's prompts
    # are 222 tokens: the bound costs them nothing.
    h200 = _server_vs_loose_ttft("h200-sxm", "llama3.1-405b", "fp8")
    b200 = _server_vs_loose_ttft("b200", "llama3.1-405b", "fp4")
    assert h200 < 0.97 and h200 < b200 == 1.0
    assert _server_vs_loose_ttft("h200-sxm", "llama2-70b", "fp8") == 1.0


def test_a_prompt_too_long_for_the_ttft_bound_is_not_a_feasible_config() -> None:
    spec = SystemSpec(get_accelerator("h100-sxm"), 8, get_model("llama3.1-405b"), "fp8")
    wl = get_workload("llama3.1-405b")
    assert best_config(spec, wl, "Server", EFF).feasible
    tight = dataclasses.replace(wl, ttft_ms=100.0)
    choice = best_config(spec, tight, "Server", EFF)
    assert not choice.feasible


def _prefill_tokens_s(part: str, precision: str) -> float:
    dep = Deployment(get_accelerator(part), get_model("llama3.1-8b"), precision)
    return float(prefill_rate(dep, EFF, get_workload("llama3.1-8b"), ONE)[0])


def test_integer_weights_prefill_at_the_rate_the_part_multiplies_them() -> None:
    # Prefill is compute-bound: it runs at the matmul rate of the weight format.
    # A Xeon's LLM stacks quantise weights only, so INT8 prefills no faster than
    # weight-only INT4 (both in BF16, as the published 2x 6980P rows run); a GPU
    # with no matmul table multiplies INT8 at its INT8 rate; the Arc Pro B60
    # multiplies INT4 at INT8 (W4A8).
    xeon8, xeon4 = (
        _prefill_tokens_s("xeon-6980p", "int8"),
        _prefill_tokens_s("xeon-6980p", "int4"),
    )
    assert xeon8 == pytest.approx(xeon4, rel=0.05)
    assert _prefill_tokens_s("h100-sxm", "int8") > 1.5 * _prefill_tokens_s(
        "h100-sxm", "int4"
    )
    arc = get_accelerator("arc-pro-b60-dual")
    assert arc.peak_flops("int4") == 2 * arc.peak_flops("bf16")


def _headroom_sweep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    out = []
    for headroom in np.linspace(0.6, 0.8, 81):
        monkeypatch.setattr(throughput, "TPOT_HEADROOM", float(headroom))
        out.append(_grid("h100-sxm", 8, "llama2-70b", "fp8", "Interactive", False))
    return out


def test_a_tpot_bound_sets_the_batch_without_the_ladders_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Llama 2 70B Interactive on 8 H100: loosening the TPOT bound by 1/3 lets the
    # batch grow smoothly: throughput rises with every step of the sweep, by under
    # 2 % a step, and by more than 15 % in all. The 40-point ladder alone moves
    # in jumps of over 5 % and never gets above the refined batches.
    refined = np.asarray(_headroom_sweep(monkeypatch))
    steps = refined[1:] / refined[:-1]
    assert np.all(steps >= 1.0)
    assert steps.max() < 1.02
    assert refined[-1] > 1.15 * refined[0]
    monkeypatch.setattr(throughput, "_REFINE", 0)
    ladder = np.asarray(_headroom_sweep(monkeypatch))
    assert (ladder[1:] / ladder[:-1]).max() > 1.05
    assert np.all(ladder <= refined * (1 + 1e-12))
