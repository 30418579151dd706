"""The finite run: what LoadGen's accounting of a run of finite length takes
from the steady state, and the validations with and without it.

``finite_run.reported`` turns a replica's steady-state tokens/s into what a
run reports: Offline ends when its longest output does (DeepSeek-R1's run to
32,768 tokens), Server when the last issued query has decoded after the
schedule. This prints, for a few systems at speed 1, the share each keeps,
then a longest-first schedule simulated sample by sample against the Offline
share, then refits the model on the published v4.1 + v5.1 rows four ways
(neither part, the Server part, the Offline part, both as shipped) and prints
the line ``perfmodel_ridge.validate`` prints (loss over all rows and over the
v4.1 rows, round out, system out, benchmark out, held-out Interactive /
DeepSeek-R1 / 405B medians). Needs ../shared for the refits.

    .venv/bin/python benchmarks/perfmodel_finite_run.py
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
from perfmodel_ridge import load_rounds, validate

from infermeter.perfmodel import finite_run
from infermeter.perfmodel.finite_run import Operating, offline_samples, reported
from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import SystemSpec, _replica_grid, deployments

SYSTEMS = (  # part, count, benchmark, precision
    ("b200", 8, "deepseek-r1", "fp4"),
    ("gb200", 72, "deepseek-r1", "fp4"),
    ("b200", 8, "llama2-70b", "fp4"),
    ("h200-sxm", 8, "llama3.1-405b", "fp8"),
    ("h200-sxm", 8, "llama2-70b", "fp8"),
)
ONE = np.asarray([1.0])
EFF = Efficiency()


def operating(part: str, count: int, bench: str, prec: str, scen: str) -> Operating:
    """The aggregated replica shape with the most steady-state tokens/s."""
    spec = SystemSpec(get_accelerator(part), count, get_model(bench), prec)
    wl = get_workload(bench)
    ops = []
    for dep in deployments(spec):
        thr, b, step = _replica_grid(dep, wl, scen, EFF, ONE)
        ops.append(Operating(dep, EFF, ONE, thr, b, step, count // dep.tp))
    return max(ops, key=lambda op: op.replicas * float(op.tokens_per_s[0]))


def shares() -> None:
    print("## share of the steady state a run reports (speed 1, aggregated)")
    for part, count, bench, prec in SYSTEMS:
        wl = get_workload(bench)
        cells = []
        for scen in ("Offline", "Server"):
            op = operating(part, count, bench, prec, scen)
            share = reported(op, wl, scen)[0] / op.tokens_per_s[0]
            cells.append(
                f"{scen} {share:.3f} (TP{op.dep.tp}, batch {op.batch[0]:.0f}, "
                f"step {op.step_s[0] * 1e3:.0f} ms)"
            )
        print(f"   {count}x {part} {bench}: " + "; ".join(cells))


def simulated_offline(op: Operating, bench: str) -> float:
    """Steady-state time over the time of a longest-first schedule of the run's
    samples (quantiles of the lengths), sequence by sequence."""
    wl = get_workload(bench)
    n = int(offline_samples(wl, op.tokens_per_s / wl.osl_mean)[0]) // op.replicas
    s2 = np.log1p(wl.osl_cv**2)
    dist = NormalDist(float(np.log(wl.osl_mean) - s2 / 2), float(np.sqrt(s2)))
    outs = np.minimum(
        np.round(np.exp([dist.inv_cdf((i + 0.5) / n) for i in range(n)])), wl.osl_max
    )
    outs = np.sort(outs)[::-1].astype(np.int64)
    free = [0] * int(op.batch[0])
    ends = np.zeros(n, dtype=np.int64)
    for i, length in enumerate(outs.tolist()):
        ends[i] = heapq.heappop(free) + length
        heapq.heappush(free, int(ends[i]))
    change = np.zeros(int(ends.max()) + 1, dtype=np.int64)
    np.add.at(change, ends - outs, 1)
    np.add.at(change, ends, -1)
    active = np.cumsum(change)[:-1].astype(float)
    full = active >= op.batch[0]
    pos = np.arange(len(active), dtype=float)
    drain = op.decode_steps(active[None, ~full], wl.isl_mean + pos[None, ~full])[0]
    total = full.sum() * op.step_s[0] + drain.sum()
    return float(outs.sum() / (op.batch[0] / op.step_s[0]) / total)


def check_offline() -> None:
    print("## Offline share: the model against a simulated longest-first schedule")
    for part, count, bench, prec in SYSTEMS[:2]:
        op = operating(part, count, bench, prec, "Offline")
        model = reported(op, get_workload(bench), "Offline")[0] / op.tokens_per_s[0]
        sim = simulated_offline(op, bench)
        print(f"   {count}x {part} {bench}: model {model:.3f}, simulated {sim:.3f}")


def main() -> None:
    shares()
    check_offline()
    both, v41, v51 = load_rounds()
    keep_off, keep_srv = finite_run._offline_share, finite_run._server_share

    def ones(op: Operating, *_: object) -> np.ndarray:
        return np.ones_like(op.batch)

    settings: tuple[
        tuple[str, Callable[..., np.ndarray], Callable[..., np.ndarray]], ...
    ]
    settings = (
        ("steady state", ones, ones),
        ("Server part", ones, keep_srv),
        ("Offline part", keep_off, ones),
        ("both (shipped)", keep_off, keep_srv),
    )
    print(
        "setting         loss   v4.1  | round out     | system out    | benchmark out |"
        " held out: Interactive / DeepSeek-R1 / 405B"
    )
    for name, off, srv in settings:
        finite_run._offline_share, finite_run._server_share = off, srv  # type: ignore[assignment]
        t0 = time.perf_counter()
        text, _, _ = validate(both, v41, v51)
        print(f"{name:<15} {text}   ({time.perf_counter() - t0:.1f} s)")
    finite_run._offline_share, finite_run._server_share = keep_off, keep_srv


if __name__ == "__main__":
    main()
