"""Print tables of figures with every cell whole.

Rich fits a table to the terminal by cutting cells short: a cost of 124.50
prints as ``124…``, an input length of 9400 as ``94…``; for a figure that is a
wrong value, not a short one. Here each column keeps its widest cell (and its
header's longest word), and a table wider than the terminal prints at its own
width: the terminal wraps the lines, ``less -S`` scrolls them.
"""

from __future__ import annotations

import copy
import dataclasses
import io
from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

_WIDEST = 1000  # columns; past this a table prints as it is


def _widest(lines: list[str]) -> int:
    return max((cell_len(line) for line in lines), default=0)


def _text(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _width(cell: object) -> int:
    return _widest(_text(cell).splitlines())


def _widest_cells(table: Table) -> list[RenderableType]:
    """Each column's widest cell (one pass over the cells)."""
    return [max(column.cells, key=_width, default="") for column in table.columns]


def _hold_widths(
    table: Table, widest: list[RenderableType], wrap: Sequence[str] = ()
) -> None:
    """Give every column of ``table`` the width of its widest cell (``widest``);
    a column named in ``wrap`` (names, not figures) only its widest word."""
    for column, cell in zip(table.columns, widest, strict=True):
        words = _text(column.header).split()
        if _text(column.header) in wrap:
            words += [w for c in column.cells for w in _text(c).split()]
            column.min_width = max(column.min_width or 0, _widest(words))
        else:
            column.min_width = max(column.min_width or 0, _width(cell), _widest(words))


def _probe(table: Table, widest: list[RenderableType]) -> Table:
    """One row holding each column's widest cell: the same column widths as
    ``table`` at any terminal width, cheap to render many times."""
    probe = copy.copy(table)
    probe.columns = [
        dataclasses.replace(c, _cells=[cell])
        for c, cell in zip(table.columns, widest, strict=True)
    ]
    probe.rows = table.rows[:1]
    return probe


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


def print_table(console: Console, table: Table, *, wrap: Sequence[str] = ()) -> None:
    """Print ``table`` on ``console`` without cutting a cell short: at the
    terminal's width where it fits whole, else at the narrowest width that does.
    Columns whose header is in ``wrap`` hold names that may wrap at spaces."""
    widest = _widest_cells(table)
    _hold_widths(table, widest, wrap)
    width = console.width
    if table.row_count:
        probe = _probe(table, widest)
        if not _renders_whole(probe, width) and _renders_whole(probe, _WIDEST):
            lo, hi = width, _WIDEST  # lo cuts a cell, hi does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if _renders_whole(probe, mid) else (mid, hi)
            width = hi
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
