"""The soft ridge's exponent: the fit's own loss, and the validations, at each p.

An operator group's time is the p-norm of its compute and memory times
(``roofline.ridge``; p = infinity is the hard roofline). For each p this refits
the model on the published v4.1 + v5.1 rows and prints the fit's penalised loss
(Huber on the log error plus the priors: what the fit minimises, so the p the
data prefer), the same loss on the v4.1 rows alone (the round-out fit's own
data), then the three validations the docs report: fit v4.1 and predict
v5.1, leave one system out, leave one benchmark out (median / p90 absolute
error), and the held-out Interactive, DeepSeek-R1 and Llama 3.1 405B medians.
Needs ../shared. With ``joint``, instead: every combination of the exponent, the
TPOT headroom and the TPOT spread in ``JOINT``, the same line each. With
``ladder``: the points of ``LADDER`` with the batch on the 40-point ladder alone,
on a 160-point one, and continuous under the TPOT bound (shipped).

    .venv/bin/python benchmarks/perfmodel/perfmodel_ridge.py [joint | ladder]
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections.abc import Sequence

from infermeter.perfmodel import roofline, throughput
from infermeter.perfmodel.calibrate import (
    Validation,
    calibrate_rows,
    leave_one_benchmark_out,
    leave_one_system_out,
    load_results,
    predict_rows,
    stats,
)
from infermeter.perfmodel.fit import fit, loss_at, prepare
from infermeter.perfmodel.published import PublishedRow, Rows

EXPONENTS = (1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 3.0, 4.0, math.inf)


def _pct(v: Validation) -> str:
    o = v.overall()
    return f"{o.median * 100:5.1f} / {o.p90 * 100:5.1f}"


def _median(v: Validation, *, scenario: str = "", benchmark: str = "") -> float:
    picked = [
        p
        for p in v.predictions
        if (not scenario or p.row.scenario == scenario)
        and (not benchmark or p.row.benchmark == benchmark)
    ]
    return stats("", picked).median * 100


def loss_of_fit(rows: Sequence[PublishedRow]) -> float:
    """The penalised loss at the fit's optimum (what the fit minimises)."""
    prepared, _ = prepare(rows)
    return loss_at(prepared, fit(prepared))


def load_rounds() -> tuple[Rows, Rows, Rows]:
    """The published rows of v4.1 + v5.1, of v4.1 and of v5.1 (../shared)."""
    return (
        load_results(["v4.1", "v5.1"]),
        load_results(["v4.1"]),
        load_results(["v5.1"]),
    )


def validate(both: Rows, v41: Rows, v51: Rows) -> tuple[str, Validation, Validation]:
    """The loss (all rows, v4.1 rows), round out, system out, benchmark out and the
    held-out Interactive / DeepSeek-R1 / 405B medians as one line; and the round-out
    and system-out validations."""
    out = predict_rows(v51, calibrate_rows(v41.rows, "v4.1"))
    system = leave_one_system_out(both)
    bench = leave_one_benchmark_out(both)
    text = (
        f"{loss_of_fit(both.rows):6.3f} {loss_of_fit(v41.rows):6.3f} | {_pct(out)} | "
        f"{_pct(system)} | {_pct(bench)} | "
        f"{_median(system, scenario='Interactive'):4.1f} / "
        f"{_median(system, benchmark='deepseek-r1'):4.1f} / "
        f"{_median(system, benchmark='llama3.1-405b'):4.1f}"
    )
    return text, out, system


def header(first: str, *, later: bool = False) -> str:
    """The column heads over ``validate``'s line, ``first`` padded to its first column
    (and a later round's, where one is given)."""
    return (
        f"{first} loss   v4.1  | round out     | system out    | benchmark out | "
        "held out: Interactive / DeepSeek-R1 / 405B"
        + (" | later round" if later else "")
    )


# ``joint``: the exponent with the TPOT headroom and spread it trades against
# (162 refits, about 20 minutes on a 2-core VM).
JOINT = (
    tuple(round(1.0 + 0.05 * i, 2) for i in range(9)),
    (0.65, 0.7, 0.75),
    (0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
)


def joint(both: Rows, v41: Rows, v51: Rows) -> None:
    """Every (p, headroom, spread) of ``JOINT``: the three constants that set the
    physics near the ridge and under the TPOT bound, chosen together."""
    print(header("p    headroom spread"))
    for p, headroom, spread in itertools.product(*JOINT):
        roofline.RIDGE_P = p
        throughput.TPOT_HEADROOM, throughput.TPOT_SPREAD = headroom, spread
        text, _, _ = validate(both, v41, v51)
        print(f"{p:<4g} {headroom:<8g} {spread:<6g} {text}")


# ``ladder``: points where the ladder's steps showed (p, headroom, spread).
LADDER = (
    (1.5, 0.7, 0.5),
    (1.25, 0.75, 0.3),
    (1.25, 0.75, 0.35),
    (1.25, 0.75, 0.4),
    (1.1, 0.7, 0.3),
)


def ladder(both: Rows, v41: Rows, v51: Rows) -> None:
    """Each point of ``LADDER`` with the batch on a ladder of 40 and 160 points and
    continuous (the ladder plus ``throughput._REFINE`` batches under the bound)."""
    print(header("p    headroom spread batch     "))
    refine, points = throughput._REFINE, throughput._BATCH_POINTS
    for p, headroom, spread in LADDER:
        roofline.RIDGE_P = p
        throughput.TPOT_HEADROOM, throughput.TPOT_SPREAD = headroom, spread
        for label, n, r in (
            ("ladder 40", 40, 0),
            ("ladder 160", 160, 0),
            ("continuous", points, refine),
        ):
            throughput._BATCH_POINTS, throughput._REFINE = n, r
            text, _, _ = validate(both, v41, v51)
            print(f"{p:<4g} {headroom:<8g} {spread:<6g} {label:<10} {text}")
    throughput._BATCH_POINTS, throughput._REFINE = points, refine


def main(argv: Sequence[str]) -> None:
    both, v41, v51 = load_rounds()
    if "joint" in argv:
        joint(both, v41, v51)
        return
    if "ladder" in argv:
        ladder(both, v41, v51)
        return
    print(header("p     "))
    for p in EXPONENTS:
        roofline.RIDGE_P = p
        t0 = time.perf_counter()
        text, _, _ = validate(both, v41, v51)
        print(f"{p:<5g} {text}   ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
