"""Steady-state throughput: prefill/decode pools split into whole replicas."""

from __future__ import annotations

import numpy as np

from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import (
    SystemSpec,
    deployments,
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


def test_long_prompts_keep_405b_aggregated() -> None:
    # 9,400-token prompts keep most accelerators prefilling either way: on 8 B200
    # the pools do not beat aggregated serving in the physics.
    agg = _grid("b200", 8, "llama3.1-405b", "fp4", "Interactive", False)
    best = _grid("b200", 8, "llama3.1-405b", "fp4", "Interactive", True)
    assert best == agg
