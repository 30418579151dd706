"""The shipped fit (v4.1 + v5.1) against a later round it never read.

Give the round's results as a website ``summary_results.json`` or a results
repository's ``summary.json`` (mlcommons/inference_results_v6.1 and on): the
rounds after v5.1 are not in ../shared, so the file is the user's. Prints the
coverage (rows the model places, and why the others are not), the errors
overall (and without each benchmark's rows) and per benchmark and scenario,
then per system group (benchmark, part, count, stack, scenario: median signed
error). Predictions are derived figures; the published values are MLPerf
results.

    .venv/bin/python benchmarks/perfmodel/perfmodel_next_round.py PATH/summary.json
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter, defaultdict

from infermeter.perfmodel.calibrate import (
    Validation,
    load_coefficients,
    load_results,
    predict_rows,
    stats,
)


def _line(label: str, v: Validation, **match: str) -> str:
    preds = [
        p
        for p in v.predictions
        if all(getattr(p.row, k) == x for k, x in match.items())
    ]
    s = stats(label, preds)
    return (
        f"  {label:30s} {len(preds):4d} rows  median {s.median * 100:5.1f} %  "
        f"p90 {s.p90 * 100:5.1f} %  bias {s.bias * 100:+6.1f} %"
    )


def main(path: str) -> None:
    rows = load_results([path])
    coef = load_coefficients()
    out = predict_rows(rows, coef)
    placed, total = len(out.predictions), len(rows.rows) + len(rows.skipped)
    print(f"{path}: rounds {', '.join(rows.rounds)}; fit: {coef.label}")
    print(f"coverage {placed} of {total} LLM rows ({placed / total * 100:.1f} %)")
    for (part, reason), n in Counter(
        (s.accelerator, s.reason.split(" (")[0]) for s in rows.skipped
    ).most_common():
        print(f"  not modelled: {n:3d} rows of {part}: {reason}")
    print(_line("all rows", out))
    for bench in sorted({p.row.benchmark for p in out.predictions}):
        rest = [p for p in out.predictions if p.row.benchmark != bench]
        s = stats("", rest)
        print(
            f"  {'without ' + bench:30s} {len(rest):4d} rows  median "
            f"{s.median * 100:5.1f} %  p90 {s.p90 * 100:5.1f} %"
        )
    for scenario in ("Offline", "Server", "Interactive"):
        print(_line(scenario, out, scenario=scenario))
    for bench in sorted({p.row.benchmark for p in out.predictions}):
        for scenario in ("Offline", "Server", "Interactive"):
            if any(
                p.row.benchmark == bench and p.row.scenario == scenario
                for p in out.predictions
            ):
                print(
                    _line(
                        f"{bench} {scenario}", out, benchmark=bench, scenario=scenario
                    )
                )
    groups: dict[tuple[str, str, int, str, str], list[float]] = defaultdict(list)
    for p in out.predictions:
        r = p.row
        groups[(r.benchmark, r.accelerator, r.count, r.stack, r.scenario)].append(
            p.error
        )
    print("per system group: median signed error (predicted / published - 1)")
    for (bench, part, count, stack, scenario), errs in sorted(groups.items()):
        print(
            f"  {bench:13s} {part:12s} x{count:<4d} {stack:8s} {scenario:11s} "
            f"{len(errs):3d} rows  {statistics.median(errs) * 100:+6.1f} %"
        )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: perfmodel_next_round.py PATH/summary.json")
    main(sys.argv[1])
