"""The finite run: what LoadGen's accounting of a run of finite length takes
from the steady state, and the validations with and without it.

``finite_run.reported`` turns a replica's steady-state tokens/s into what a
run reports: Offline ends when its longest output does (DeepSeek-R1's run to
32,768 tokens), Server when the last issued query has decoded after the
schedule. This prints, for a few systems at speed 1, the share each keeps,
then a longest-first schedule simulated sample by sample against the Offline
share, then refits the model on the published v4.1 + v5.1 rows once per value
of each structure constant (ridge exponent, TPOT spread and headroom, TTFT P,
expert tile cap) and prints the loss, then four ways (neither part, the Server
part, the Offline part, both as shipped) and prints
the line ``perfmodel_ridge.validate`` prints (loss over all rows and over the
v4.1 rows, round out, system out, benchmark out, held-out Interactive /
DeepSeek-R1 / 405B medians). Needs ../shared for the refits.

    .venv/bin/python benchmarks/perfmodel/perfmodel_finite_run.py
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from perfmodel_ridge import load_rounds, loss_of_fit, validate

from infermeter.perfmodel import finite_run, roofline, throughput
from infermeter.perfmodel.finite_run import (
    Operating,
    offline_samples,
    reported,
    simulated_offline_share,
)
from infermeter.perfmodel.published import PublishedRow
from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.specs import (
    Workload,
    get_accelerator,
    get_model,
    get_workload,
)
from infermeter.perfmodel.throughput import SystemSpec, operating_point

SYSTEMS = (  # part, count, benchmark, precision
    ("b200", 8, "deepseek-r1", "fp4"),
    ("gb200", 72, "deepseek-r1", "fp4"),
    ("b200", 8, "llama2-70b", "fp4"),
    ("h200-sxm", 8, "llama3.1-405b", "fp8"),
    ("h200-sxm", 8, "llama2-70b", "fp8"),
)
EFF = Efficiency()


def operating(part: str, count: int, bench: str, prec: str, scen: str) -> Operating:
    spec = SystemSpec(get_accelerator(part), count, get_model(bench), prec)
    return operating_point(spec, get_workload(bench), scen, EFF)


def _run_size(op: Operating, wl: Workload, scenario: str) -> str:
    """Offline: the run's samples and its full-batch steps per replica."""
    if scenario != "Offline":
        return ""
    n = offline_samples(wl, op.replicas * op.tokens_per_s / wl.osl_mean)[0]
    steps = n / op.replicas * wl.osl_mean / op.batch[0]
    return f", {n:,.0f} samples, {steps:,.0f} full-batch steps"


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
                f"step {op.step_s[0] * 1e3:.0f} ms{_run_size(op, wl, scen)})"
            )
        print(f"   {count}x {part} {bench}: " + "; ".join(cells))


def check_offline() -> None:
    print("## Offline share: the model against a simulated longest-first schedule")
    for part, count, bench, prec in SYSTEMS[:2]:
        op = operating(part, count, bench, prec, "Offline")
        model = reported(op, get_workload(bench), "Offline")[0] / op.tokens_per_s[0]
        sim = simulated_offline_share(op, get_workload(bench))
        print(f"   {count}x {part} {bench}: model {model:.3f}, simulated {sim:.3f}")


CONSTANTS = (  # module, name, values (the shipped one among them)
    (roofline, "RIDGE_P", (1.0, 1.1, 1.25, 1.5, 1.75)),
    (throughput, "TPOT_SPREAD", (0.2, 0.25, 0.3, 0.4, 0.5)),
    (throughput, "TPOT_HEADROOM", (0.6, 0.65, 0.7, 0.75, 0.8, 0.85)),
    (throughput, "TTFT_P99_PROMPT", (2.0, 2.5, 3.0, 3.5)),
    (roofline, "EXPERT_TILE_ROWS", (32.0, 64.0, 128.0)),
)


def constants(both_rows: Sequence[PublishedRow]) -> None:
    """The structure constants re-measured with the finite run: the loss over all
    rows at each value, one refit each (the shipped value marked *)."""
    print("## structure constants: loss over the v4.1 + v5.1 rows per value")
    for module, name, values in CONSTANTS:
        shipped = getattr(module, name)
        cells = []
        for value in values:
            setattr(module, name, value)
            mark = "*" if value == shipped else ""
            cells.append(f"{value:g}{mark} {loss_of_fit(both_rows):.3f}")
        setattr(module, name, shipped)
        print(f"   {name}: " + " / ".join(cells))


def main() -> None:
    shares()
    check_offline()
    both, v41, v51 = load_rounds()
    constants(both.rows)
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
