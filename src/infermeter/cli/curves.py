"""Curves side by side on a terminal: ``endpoints curve`` and ``compare`` of curve folders.

The per-region table (each curve's height and area against the first's) as a table
or JSON, and optionally the chart as a page of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from infermeter.cli.tables import print_table
from infermeter.runs.endpoints_curve import Curve, region_table, report_view


def show_curves(
    curves: list[Curve], *, out: Path | None = None, as_json: bool = False
) -> None:
    """Print the region table of ``curves``; ``out``: write the chart page too."""
    # Imported here: a terminal table needs no plotly.
    from infermeter.report.endpoints_chart import curve_figure, write_page

    console = Console(highlight=False)
    rows = region_table(curves)
    view = report_view(curves)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        text = view["table"]
        table = Table(title="Per region (infermeter results, unverified)")
        for col in text[0]:
            table.add_column(col, justify="right")
        for row in text[1:]:
            table.add_row(*row)
        print_table(console, table)
    if out is not None:
        title = "MLPerf Endpoints curve: " + ", ".join(c.label for c in curves)
        figure = curve_figure(view["curves"], view["bands"])
        write_page(out, figure, view["table"], title)
        console.print(f"wrote {out}", markup=False)
