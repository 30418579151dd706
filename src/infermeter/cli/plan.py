"""``infermeter plan``: the cheapest configuration per accelerator for a serving target."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from infermeter.cli.main import app
from infermeter.cli.tables import print_table
from infermeter.errors import ConfigError

if TYPE_CHECKING:
    from infermeter.perfmodel.plancheck import Simulated
    from infermeter.perfmodel.planner import Infeasible, Option, Targets

Opt = typer.Option


def _money(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


@app.command("plan")
def plan_command(
    model: Annotated[str, Opt(help="Model, e.g. llama2-70b.")] = "llama2-70b",
    users: Annotated[int, Opt(help="Concurrent users (streams).")] = 100,
    tokens_per_user: Annotated[
        float, Opt(help="Output tokens/s each user needs (p99 TPOT = 1 / this).")
    ] = 30.0,
    ttft_ms: Annotated[
        float, Opt(help="p99 time-to-first-token target (ms).")
    ] = 2000.0,
    precision: Annotated[
        str | None,
        Opt(
            help="fp4, fp8, fp16, int8 or int4 (weights; default: fp4, fp8 and "
            "fp16, where the part computes them)."
        ),
    ] = None,
    isl: Annotated[
        int | None, Opt(help="Input tokens (default: benchmark mean).")
    ] = None,
    osl: Annotated[
        int | None, Opt(help="Output tokens (default: benchmark mean).")
    ] = None,
    accelerator: Annotated[
        list[str] | None, Opt(help="Accelerator(s) to consider (default: all).")
    ] = None,
    stack: Annotated[
        str | None,
        Opt(
            help="Serving stack whose calibrated effects apply: trt-llm, vllm, "
            "sglang, llmboost, pytorch or other (default: each part's usual one, "
            "trt-llm on NVIDIA, pytorch on CPUs, vllm elsewhere)."
        ),
    ] = None,
    disaggregated: Annotated[
        bool, Opt(help="Also consider prefill-only and decode-only replica pools.")
    ] = False,
    fit: Annotated[
        str | None,
        Opt(
            help="Coefficients: a shipped fit (v4.1, v4.1+v5.1; default: every "
            "round) or a JSON file; anchors come from its rounds only."
        ),
    ] = None,
    round_: Annotated[
        str,
        Opt(
            "--round",
            help="Plan with that MLPerf round's software (e.g. v5.1: a benchmark's "
            "first-round effects apply); default: mature software.",
        ),
    ] = "",
    simulate: Annotated[
        int,
        Opt(
            help="Check each option in the serving simulator: one replica at its "
            "planned load, this many Poisson requests (0: off)."
        ),
    ] = 0,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """Per accelerator type, the cheapest (precision, TP, replicas) meeting the targets.

    Predicted with the calibrated roofline, anchored where the fit's rounds hold
    published rows of the model's benchmark (the anchors' result IDs are listed
    under the table; an option without one is "modelled"); costs, $/Mtok and
    tokens/J (at TDP) are derived figures from a dated price snapshot. Examples:

      infermeter plan --model llama2-70b --users 100 --tokens-per-user 30 --ttft-ms 2000

      infermeter plan --precision fp8 --isl 1000 --osl 300 --accelerator h100-sxm --json

      infermeter plan --model deepseek-r1 --users 60 --accelerator b200 --disaggregated

      infermeter plan --isl 4000 --ttft-ms 1000 --accelerator h200-sxm --simulate 2000
                      # (tests: --simulate 200)

      infermeter plan --model deepseek-r1 --users 2000 --tokens-per-user 12.5 --round v5.1

    TP: accelerators per replica (EP: expert parallel); P/D: prefill and decode
    replica pools. TPOT p99 / TTFT p99: at the planned load per replica under
    random (Poisson) arrivals; a P/D row's TTFT is its prefill without queueing.
    """
    from infermeter.perfmodel.planner import Option, Targets, plan
    from infermeter.perfmodel.plannotes import (
        calibration_note,
        evidence_note,
        first_round_note,
        lengths_note,
        pools_note,
        weight_only_note,
    )
    from infermeter.perfmodel.specs import get_workload

    if simulate < 0:  # before the plan: it takes seconds, and then is refused
        raise ConfigError(f"--simulate must be >= 0 requests (got {simulate}).")
    wl = get_workload(model)
    targets = Targets(
        users,
        tokens_per_user,
        ttft_ms,
        round(wl.isl_mean) if isl is None else isl,  # 0 is an error, not "unset"
        round(wl.osl_mean) if osl is None else osl,
    )
    rows = plan(
        model,
        targets,
        precision=precision,
        accelerator_names=accelerator,
        disaggregated=disaggregated,
        fit=fit,
        stack=stack,
        round_=round_,
    )
    note = calibration_note(model, targets, fit)
    first = first_round_note(model, fit, round_)
    assumed = lengths_note(model, isl_given=isl is not None)
    pools = pools_note(model, targets, disaggregated)
    evidence = evidence_note(rows, fit, model)
    weight_only = weight_only_note(model, rows)
    sims = _simulated(rows, model, targets, simulate, fit, quiet=as_json)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "targets": dataclasses.asdict(targets),
                    "label": "predicted (derived)",
                    "note": note,
                    "lengths_note": assumed,
                    "pools_note": pools,
                    "evidence_note": evidence,
                    "weight_only_note": weight_only,
                    "first_round_note": first,
                    "options": [
                        {
                            "feasible": isinstance(r, Option),
                            **dataclasses.asdict(r),
                            **({"simulated": _sim_dict(sims[i])} if simulate else {}),
                        }
                        for i, r in enumerate(rows)
                    ],
                },
                indent=2,
            )
        )
        return
    table = Table(
        Column("Accelerator", no_wrap=True),
        "Prec",
        "Stack",
        "TP",
        "Replicas",
        "Accels (band)",
        "TPOT p99 ms",
        "TTFT p99 ms",
        "$/h",
        "$/Mtok",
        "tok/J",
        *(["Sim p99 TPOT / TTFT ms"] if simulate else []),
        title="Plan (predicted, derived)",
    )
    out = Console(highlight=False)
    for i, r in enumerate(rows):
        if isinstance(r, Option):
            lo, hi = r.accelerators_band
            sim = sims[i]
            extra = [
                "-" if sim is None else f"{sim.tpot_p99_ms:.1f} / {sim.ttft_p99_ms:.0f}"
            ]
            table.add_row(
                r.accelerator,
                r.precision,
                r.stack,
                f"{r.tp}{' EP' if r.expert_parallel else ''}",
                f"{r.replicas}{' P/D' if r.disaggregated else ''}",
                f"{r.accelerators} ({lo}-{hi})",
                f"{r.tpot_ms:.1f}",
                f"{'>=' if r.disaggregated else ''}{r.ttft_ms:.0f}",
                _money(r.usd_per_hour, ".2f"),
                _money(r.usd_per_mtok, ".3f"),
                _money(r.tokens_per_joule, ".2f"),
                *(extra if simulate else []),
            )
    print_table(out, table)
    if simulate:
        out.print(
            f"simulated: one replica at its planned load, {simulate} Poisson "
            "requests (seed 1), the workload's lengths; '-': not simulated (P/D)"
        )
    for r in rows:
        if not isinstance(r, Option):
            out.print(f"{r.accelerator}: infeasible: {r.reason}")
        elif r.anchors:
            more = r.anchor_count - len(r.anchors)
            out.print(
                f"{r.accelerator}: anchored on {', '.join(r.anchors)}"
                + (f" +{more} more" if more else ""),
                markup=False,
            )
        else:
            out.print(
                f"{r.accelerator}: modelled (no published row of {model} to anchor on)"
            )
    for line in (note, assumed, pools, evidence, weight_only, first):
        if line:
            out.print(f"note: {line}")


def _simulated(
    rows: list[Option | Infeasible],
    model: str,
    targets: Targets,
    requests: int,
    fit: str | None,
    *,
    quiet: bool,
) -> list[Simulated | None]:
    """Each option checked in the simulator (None: infeasible, P/D, or off)."""
    from infermeter.perfmodel.plancheck import simulate_option
    from infermeter.perfmodel.planner import Option

    out: list[Simulated | None] = []
    err = Console(stderr=True, highlight=False)
    for r in rows:
        if not requests or not isinstance(r, Option):
            out.append(None)
            continue
        if not quiet:
            err.print(f"simulating {r.accelerator} ({requests} requests)...")
        out.append(simulate_option(r, model, targets, requests=requests, fit=fit))
    return out


def _sim_dict(sim: Simulated | None) -> dict[str, float | int] | None:
    return None if sim is None else dataclasses.asdict(sim)
