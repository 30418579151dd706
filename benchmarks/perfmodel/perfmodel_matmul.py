"""The integer-weight matmul rates: the fit's own loss, and the validations, with
each part's ``matmul`` table (``accelerators.toml``) as shipped and without it.

The Xeons multiply INT8 weights at their BF16 rate (LLM stacks there quantise
weights only) and the Arc Pro B60 INT4 weights at its INT8 rate (W4A8); the
evidence is in each part's ``source``. For the shipped tables, each one removed
and both removed, this refits the model on the published v4.1 + v5.1 rows and
prints the line ``perfmodel_ridge.validate`` prints (loss over all rows and over
the v4.1 rows, round out, system out, benchmark out, held-out Interactive /
DeepSeek-R1 / 405B medians), then the round-out and system-out median error of
the rows those parts ran. First it prints the evidence the tables rest on: the
published 2x Xeon 6980P Llama 3.1 8B rows at INT8 and INT4, and the GEMM FLOP/s
the Arc Pro B60 rows need (2 x active parameters x (1 + ISL / OSL) per output
token, at the workloads' mean lengths) against the cards' BF16 peak. Needs
../shared.

    .venv/bin/python benchmarks/perfmodel/perfmodel_matmul.py
"""

from __future__ import annotations

import dataclasses
import time

from perfmodel_ridge import load_rounds, validate

from infermeter.perfmodel import specs
from infermeter.perfmodel.calibrate import Validation, stats
from infermeter.perfmodel.published import Rows
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload

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


def evidence(v51: Rows) -> None:
    """The published rows each table is read from."""
    print("## evidence (published MLPerf v5.1 rows; FLOP/s derived)")
    for r in v51.rows:
        if r.accelerator == "xeon-6980p" and r.benchmark == "llama3.1-8b":
            print(f"   {r.label} {r.precision}: {r.tokens_per_s:,.0f} tokens/s")
    for r in v51.rows:
        if r.accelerator in ARC and r.scenario == "Offline":
            m, w = get_model(r.benchmark), get_workload(r.benchmark)
            need = r.tokens_per_s * 2 * m.params_active * (1 + w.isl_mean / w.osl_mean)
            peak = r.count * get_accelerator(r.accelerator).peak_flops("bf16")
            print(
                f"   {r.label}: {r.tokens_per_s:,.0f} tokens/s needs {need / 1e12:,.0f}"
                f" TFLOP/s of GEMMs, {need / peak * 100:.0f} % of {peak / 1e12:,.0f}"
                f" TFLOP/s BF16 peak (ISL {w.isl_mean:,.1f}, OSL {w.osl_mean:,.2f})"
            )


def main() -> None:
    both, v41, v51 = load_rounds()
    evidence(v51)
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
