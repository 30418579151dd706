"""cli.tables.print_table: a figure in a table is never cut short."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from infermeter.cli.tables import print_table


def _plan_like() -> Table:
    heads = ["Accelerator", "Prec", "TP", "Replicas", "Accels (band)"]
    heads += ["TPOT p99 ms", "TTFT p99 ms", "$/h", "$/Mtok", "tok/J"]
    table = Table(*heads, title="Plan")
    table.add_row("h100-pcie", "fp8", "2", "25", "50 (40-62)", "29.0", "88")
    table.add_row("a100-sxm", "fp16", "4", "2", "8 (8-12)", "28.2", "246", "124.50")
    table.add_row("gh200", "fp8", "1", "2", "2 (2-3)", "31.0", "202", "2.98", "0.276")
    return table


def _printed(table: Table, width: int) -> str:
    out = Console(file=io.StringIO(), width=width, color_system=None)
    print_table(out, table)
    return out.file.getvalue()  # type: ignore[attr-defined]


def test_a_table_too_wide_for_the_terminal_prints_whole_at_its_own_width() -> None:
    plain = Console(file=io.StringIO(), width=60, color_system=None)
    plain.print(_plan_like())
    cut = plain.file.getvalue()  # type: ignore[attr-defined]
    assert "124.50" not in cut or "0.276" not in cut  # what rich alone does
    text = _printed(_plan_like(), 60)
    assert "…" not in text
    for cell in ("124.50", "0.276", "50 (40-62)", "h100-pcie", "tok/J"):
        assert cell in text
    widths = {len(line) for line in text.splitlines() if line.startswith("┃")}
    assert len(widths) == 1 and widths.pop() > 60


def test_a_table_that_fits_prints_at_the_terminal_width() -> None:
    table = Table("key", "value")
    table.add_row("llama2-70b", "222.3")
    text = _printed(table, 80)
    assert "222.3" in text and max(len(line) for line in text.splitlines()) <= 80


def test_a_long_table_is_widened_from_its_widest_cells() -> None:
    # The width search renders a one-row probe (each column's widest cell), not
    # the whole table: 1,448 published rows once took two minutes to list.
    table = Table("result ID", "accelerator", "value", "per acc.")
    for i in range(600):
        name = "NVIDIA GB300 NVL72 (x72)" if i == 417 else "b200"
        table.add_row(f"5.1-{i:04d}", name, f"{1000.5 + i:,.1f}", f"{i / 8:,.1f}")
    text = _printed(table, 40)
    assert "…" not in text and "NVIDIA GB300 NVL72 (x72)" in text
    assert "1,599.5" in text and text.count("5.1-0") == 600
