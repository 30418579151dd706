"""The TTFT bound's constants: the fit's own loss over a grid, and the validations.

Server and Interactive rows hold the replica's prefill to the load at which the
p99 TTFT stays in bound (``throughput.prefill_load_limit``): TTFT99 = s * (P +
c * rho / (1 - rho)), ``s`` the mean prompt's prefill time, ``P`` the p99
prompt's over the mean's, ``c`` the queueing wait's scale. Part 1 prints the
fit's penalised loss over the published v4.1 + v5.1 rows on a (P, c) grid (what
the data prefer; the v4.1 rows alone cannot choose: no v4.1 prompt is long
enough for the bound to bind). Part 2 prints, for the bound off, the shipped
constants and its neighbours, the loss and the validations the docs report:
fit v4.1 and predict v5.1, leave one system out, leave one benchmark out
(median / p90 absolute error), and the held-out Interactive, DeepSeek-R1 and
Llama 3.1 405B medians. Needs ../shared.

    .venv/bin/python benchmarks/perfmodel_ttft.py
"""

from __future__ import annotations

import time

import numpy as np
from perfmodel_ridge import _median, _pct, loss_of_fit

from infermeter.perfmodel import throughput
from infermeter.perfmodel.calibrate import (
    calibrate_rows,
    leave_one_benchmark_out,
    leave_one_system_out,
    load_results,
    predict_rows,
)
from infermeter.perfmodel.roofline import FloatArray

PROMPTS = (1.5, 2.0, 2.5, 3.0)
QUEUES = (0.5, 0.717, 1.0, 1.5)
SHIPPED = (throughput.TTFT_P99_PROMPT, throughput.TTFT_QUEUE)
LIMIT = throughput.prefill_load_limit


def _unbounded(service_s: FloatArray, ttft_s: float) -> FloatArray:
    return np.ones_like(service_s)


def _set(prompt: float, queue: float) -> None:
    throughput.TTFT_P99_PROMPT, throughput.TTFT_QUEUE = prompt, queue
    throughput.prefill_load_limit = LIMIT


def main() -> None:
    both = load_results(["v4.1", "v5.1"])
    v41, v51 = load_results(["v4.1"]), load_results(["v5.1"])
    print("1. loss over v4.1 + v5.1; rows P (p99 prompt), columns c (queue)")
    print("P \\ c " + "".join(f"{c:>8g}" for c in QUEUES))
    for prompt in PROMPTS:
        losses = []
        for queue in QUEUES:
            _set(prompt, queue)
            losses.append(loss_of_fit(both.rows))
        print(f"{prompt:<6g}" + "".join(f"{x:8.3f}" for x in losses))
    print(
        "\n2. P, c   loss   v4.1  | round out     | system out    | benchmark out | "
        "held out: Interactive / DeepSeek-R1 / 405B"
    )
    for setting in ("off", SHIPPED, (2.0, SHIPPED[1]), (3.0, SHIPPED[1])):
        t0 = time.perf_counter()
        if setting == "off":
            throughput.prefill_load_limit = _unbounded
            label = "off"
        else:
            _set(*setting)
            label = f"{setting[0]:g}, {setting[1]:.3g}"
        out = predict_rows(v51, calibrate_rows(v41.rows, "v4.1"))
        system = leave_one_system_out(both)
        bench = leave_one_benchmark_out(both)
        print(
            f"{label:<9} {loss_of_fit(both.rows):6.3f} {loss_of_fit(v41.rows):6.3f} | "
            f"{_pct(out)} | {_pct(system)} | {_pct(bench)} | "
            f"{_median(system, scenario='Interactive'):4.1f} / "
            f"{_median(system, benchmark='deepseek-r1'):4.1f} / "
            f"{_median(system, benchmark='llama3.1-405b'):4.1f}"
            f"   ({time.perf_counter() - t0:.1f} s)"
        )
    _set(*SHIPPED)


if __name__ == "__main__":
    main()
