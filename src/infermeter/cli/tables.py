"""Print tables of figures with every cell whole.

Rich fits a table to the terminal by cutting cells short: a cost of 124.50
prints as ``124…``, an input length of 9400 as ``94…``. For a figure that is
a wrong value, not a short one. Here each column keeps its widest cell (and its
header's longest word); a table wider than the terminal prints at its own width
and the terminal wraps the lines.
"""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

_WIDEST = 1000  # columns; past this a table prints as it is


def _widest(lines: list[str]) -> int:
    return max((cell_len(line) for line in lines), default=0)


def whole_cells(table: Table) -> Table:
    """Give every column of ``table`` the width of its widest cell; returns it."""
    for column in table.columns:
        cells = [c.plain if isinstance(c, Text) else str(c) for c in column.cells]
        lines = [line for cell in cells for line in cell.splitlines()]
        header = (
            column.header.plain if isinstance(column.header, Text) else column.header
        )
        words = str(header).split()
        column.min_width = max(column.min_width or 0, _widest(lines), _widest(words))
    return table


def _renders_whole(table: Table, width: int) -> bool:
    """Whether ``table`` at ``width`` shows every cell and its right edge."""
    out = Console(width=width, file=io.StringIO(), color_system=None)
    out.print(table)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    if "…" in text:
        return False
    if table.box is None or not table.show_edge:
        return all(cell_len(line) < width for line in text.splitlines())
    edge = table.box.top_left
    tops = [ln.rstrip() for ln in text.splitlines() if ln.lstrip().startswith(edge)]
    return bool(tops) and tops[0].endswith(table.box.top_right)


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` on ``console`` without cutting a cell short: at the
    terminal's width where it fits whole, else at the narrowest width that does."""
    whole_cells(table)
    width = console.width
    while width < _WIDEST and not _renders_whole(table, width):
        width += 1
    if width == console.width:
        console.print(table)
        return
    Console(
        file=console.file,
        width=width,
        highlight=False,
        no_color=console.no_color,
        force_terminal=console.is_terminal,
    ).print(table)
