"""``infermeter endpoints``: plan, run, package and check an MLPerf Endpoints v1.0 curve.

Everything here makes infermeter results (unverified); only the official reference
client's runs, checked by the official ``submission-checker``, can be submitted.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from infermeter.cli.main import app
from infermeter.cli.tables import print_table
from infermeter.errors import ConfigError

endpoints_app = typer.Typer(
    no_args_is_help=True,
    help="MLPerf Endpoints v1.0: plan the curve's points, run them by the rules, "
    "package the submission tree and run the official checker on it.\n\n"
    "Examples:\n\n"
    "  infermeter endpoints plan --c-max 1000\n\n"
    "  infermeter endpoints plan --c-max 1000 --concurrency 1,8,32,64,128,512,1000",
)
app.add_typer(endpoints_app, name="endpoints")
console = Console(highlight=False)


def parse_levels(text: str | None, flag: str = "--concurrency") -> list[int]:
    """A comma list of whole concurrency levels; a bad entry is a usage error."""
    if not text:
        return []
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(
            f"{flag} {text!r} is not a list of whole numbers, e.g. 1,8,32,64"
        ) from None


@endpoints_app.command("plan")
def plan_command(
    c_max: Annotated[
        int,
        typer.Option(help="Maximum supported concurrency C_max (system_desc.json)."),
    ],
    c_min: Annotated[int, typer.Option(help="The lowest point, C_min (1..32).")] = 1,
    points: Annotated[int, typer.Option(help="How many levels (7..32).")] = 7,
    concurrency: Annotated[
        str | None,
        typer.Option(help="Check this list instead of choosing one, e.g. 1,8,64,1000."),
    ] = None,
    warmup_s: Annotated[
        float, typer.Option(help="Warmup seconds per point (excluded from figures).")
    ] = 60.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The four regions of interest (§5.5), legal levels (§5.3: 7..32 points, one Ultra
    Low, one in each of Low, Medium and High), each point's minimum steady-state window
    (§6.2) and dataset passes (§4.4), and the campaign's wall time.

    Examples:

      infermeter endpoints plan --c-max 1000

      infermeter endpoints plan --c-max 4096 --points 12

      infermeter endpoints plan --c-max 1000 --concurrency 1,8,32,64,128,512,1000
    """
    from infermeter.runs.endpoints_plan import plan_curve, region_label

    if warmup_s < 0:
        raise ConfigError(f"--warmup-s must be >= 0 (got {warmup_s:g}).")
    plan = plan_curve(
        c_max,
        c_min=c_min,
        count=points,
        points=parse_levels(concurrency),
        warmup_s=warmup_s,
    )
    if as_json:
        console.print_json(json.dumps(plan.to_dict()))
        return
    regions = Table(
        title=f"Regions (§5.5) for C_max {c_max}, C_min {plan.regions.c_min}"
    )
    for col in ("region", "concurrency"):
        regions.add_column(col)
    for name, bounds in plan.regions.items():
        regions.add_row(region_label(name), str(bounds))
    print_table(console, regions)
    table = Table(title="Points (infermeter plan; MLPerf Endpoints v1.0 rules)")
    for col in ("concurrency", "region", "min window s", "min passes"):
        table.add_column(col, justify="right")
    for p in plan.points:
        table.add_row(
            str(p.concurrency),
            region_label(p.region),
            str(p.min_window_s),
            str(p.min_passes),
        )
    print_table(console, table)
    bound = "at least " if plan.total_is_lower_bound else ""
    console.print(
        f"{len(plan.points)} points; campaign wall time {bound}{_hours(plan.total_s)} "
        f"(windows + {warmup_s:g} s warmup each; a window spans whole dataset passes, "
        "so a slow endpoint or a large dataset runs longer)."
    )


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h ({seconds:,.0f} s)"
