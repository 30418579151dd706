"""The TTFT bound's and the TPOT spread's constants: the fit's own loss, and the
validations.

Server and Interactive rows hold the replica's prefill to the load at which the
p99 TTFT stays in bound (``throughput.prefill_load_limit``: TTFT99 = s * (P +
c * rho / (1 - rho)), ``s`` the mean prompt's prefill time, ``P`` the p99
prompt's over the mean's, ``c`` the queueing wait's scale), and aggregated
serving's p99 TPOT sits ``K`` times latency.py's Poisson tail of prefill landing
in decode steps above the mean step (``throughput.tpot_spread``, ``K`` =
``TPOT_SPREAD``). Part 1 prints the fit's penalised loss over the published v4.1
+ v5.1 rows on a (P, c) grid at the shipped K; part 2 over K at the shipped P
and c, and on a (P, K) grid; the v4.1 rows alone cannot choose P (none of their
prompts is long enough for the TTFT bound to bind). Part 3 prints, for both off,
the TTFT bound alone, the shipped constants and two neighbours, the loss and the
validations the docs report: fit v4.1 and predict v5.1, leave one system out,
leave one benchmark out (median / p90 absolute error), the held-out
Interactive, DeepSeek-R1 and Llama 3.1 405B medians, the rows over 30 % round
out and over 25 % held out, and the in-sample fit. Needs ../shared.

    .venv/bin/python benchmarks/perfmodel/perfmodel_ttft.py
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from perfmodel_ridge import _pct, load_rounds, loss_of_fit, validate

from infermeter.perfmodel import throughput
from infermeter.perfmodel.calibrate import (
    Validation,
    calibrate_rows,
    predict_rows,
)
from infermeter.perfmodel.published import PublishedRow
from infermeter.perfmodel.roofline import FloatArray

PROMPTS = (1.5, 2.0, 2.5, 3.0)
QUEUES = (0.5, 0.717, 1.0, 1.5)
SPREADS = (0.0, 0.25, 0.35, 0.5, 0.65, 0.75, 1.0)
SHIPPED = (throughput.TTFT_P99_PROMPT, throughput.TTFT_QUEUE, throughput.TPOT_SPREAD)
LIMIT = throughput.prefill_load_limit


def _unbounded(service_s: FloatArray, ttft_s: float) -> FloatArray:
    return np.ones_like(service_s)


def _set(prompt: float, queue: float, spread: float, *, ttft: bool = True) -> None:
    throughput.TTFT_P99_PROMPT, throughput.TTFT_QUEUE = prompt, queue
    throughput.TPOT_SPREAD = spread
    throughput.prefill_load_limit = LIMIT if ttft else _unbounded


def _grid(
    rows: Sequence[PublishedRow], label: str, settings: list[list[tuple]]
) -> None:
    print(label)
    for line in settings:
        losses = []
        for setting in line:
            _set(*setting)
            losses.append(loss_of_fit(rows))
        print("  " + "".join(f"{x:8.3f}" for x in losses))


def _over(v: Validation, limit: float) -> int:
    return sum(abs(p.error) > limit for p in v.predictions)


def main() -> None:
    both, v41, v51 = load_rounds()
    p0, c0, k0 = SHIPPED
    _grid(
        both.rows,
        f"1. loss, rows P {PROMPTS}, columns c {QUEUES} (K {k0:g})",
        [[(p, c, k0) for c in QUEUES] for p in PROMPTS],
    )
    _grid(
        both.rows,
        f"2. loss over K {SPREADS} (P {p0:g}, c {c0:.3g}); then rows P (2, 2.5, 3), "
        "columns K (0.35, 0.5, 0.65)",
        [[(p0, c0, k) for k in SPREADS]]
        + [[(p, c0, k) for k in (0.35, 0.5, 0.65)] for p in (2.0, 2.5, 3.0)],
    )
    print(
        "\n3. setting          loss   v4.1  | round out     | system out    | "
        "benchmark out | held out: Interactive / DeepSeek-R1 / 405B | rows over 30 % "
        "round out / over 25 % system out | in-sample"
    )
    cases = (
        ("both off", (p0, c0, 0.0), False),
        ("TTFT bound alone", (p0, c0, 0.0), True),
        ("shipped", SHIPPED, True),
        ("K 1", (p0, c0, 1.0), True),
        ("P 3, K 0.5", (3.0, c0, k0), True),
    )
    for label, setting, ttft in cases:
        t0 = time.perf_counter()
        _set(*setting, ttft=ttft)
        text, out, system = validate(both, v41, v51)
        print(
            f"{label:<18} {text} | {_over(out, 0.30)} / {_over(system, 0.25)} | "
            f"{_pct(predict_rows(both, calibrate_rows(both.rows)))}"
            f"   ({time.perf_counter() - t0:.1f} s)"
        )
    _set(*SHIPPED)


if __name__ == "__main__":
    main()
