"""The integer-weight matmul rates: the fit's own loss, and the validations, with
each part's ``matmul`` table (``accelerators.toml``) as shipped and without it.

The Xeons multiply INT8 weights at their BF16 rate (LLM stacks there quantise
weights only) and the Arc Pro B60 INT4 weights at its INT8 rate (W4A8); the
evidence is in each part's ``source``. For the shipped tables, each one removed
and both removed, this refits the model on the published v4.1 + v5.1 rows and
prints the line ``perfmodel_ridge.validate`` prints (loss over all rows and over
the v4.1 rows, round out, system out, benchmark out, held-out Interactive /
DeepSeek-R1 / 405B medians), then the round-out and system-out median error of
the rows those parts ran. Needs ../shared.

    .venv/bin/python benchmarks/perfmodel_matmul.py
"""

from __future__ import annotations

import dataclasses
import time

from perfmodel_ridge import validate

from infermeter.perfmodel import specs
from infermeter.perfmodel.calibrate import Validation, load_results, stats

XEONS = ("xeon-6980p", "xeon-6787p", "xeon-8592plus")
ARC = ("arc-pro-b60-dual",)
SETTINGS = (
    ("shipped", ()),
    ("no Xeon table", XEONS),
    ("no Arc table", ARC),
    ("neither", XEONS + ARC),
)


def _without(parts: tuple[str, ...]) -> None:
    """Set the built-in spec table to the shipped one less ``parts``' matmul tables."""
    specs._builtin_accelerators.cache_clear()
    table = specs._builtin_accelerators()
    for key in parts:
        table[key] = dataclasses.replace(table[key], matmul=())


def _parts_median(v: Validation, parts: tuple[str, ...]) -> str:
    picked = [p for p in v.predictions if p.row.accelerator in parts]
    return f"{stats('', picked).median * 100:5.1f}"


def main() -> None:
    both = load_results(["v4.1", "v5.1"])
    v41, v51 = load_results(["v4.1"]), load_results(["v5.1"])
    print(
        "setting        loss   v4.1  | round out     | system out    | benchmark out |"
        " held out: Interactive / DeepSeek-R1 / 405B | Xeon rows round / system out |"
        " Arc rows round / system out"
    )
    for name, parts in SETTINGS:
        _without(parts)
        t0 = time.perf_counter()
        text, out, system = validate(both, v41, v51)
        print(
            f"{name:<14} {text} | {_parts_median(out, XEONS)} / "
            f"{_parts_median(system, XEONS)} | {_parts_median(out, ARC)} / "
            f"{_parts_median(system, ARC)}   ({time.perf_counter() - t0:.1f} s)"
        )
    _without(())


if __name__ == "__main__":
    main()
