"""``--help`` at 80 columns: option names whole, the help text wraps instead.

Typer lays options out in a Rich table whose columns all shrink when the
terminal is narrow, so ``--total-sample-count`` printed as ``--total-sample-c…``
and two ``--slow-first-byte-*`` options looked alike. Here the columns of
option names keep their full width (``no_wrap``); the type and the description
take what is left and wrap. Typer offers no setting for it: its module's ``Table`` is
replaced by this subclass, which only changes column wrapping.
"""

from __future__ import annotations

from typing import Any

import typer.rich_utils
from rich.table import Table
from rich.text import Text


class _HelpTable(Table):
    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*_stacked(list(renderables)), **kwargs)
        for column in self.columns[:-1]:
            if _names(column.cells):
                column.no_wrap = True
        for item in getattr(renderables[-1], "renderables", [renderables[-1]]):
            if isinstance(item, Text):
                item.overflow = "fold"  # a long word of help wraps, never "…"


def _stacked(cells: list[Any]) -> list[Any]:
    """An options row with its ``--no-x`` name under ``--x`` in one column: a
    column of its own kept ~20 columns blank on most rows at 80 wide."""
    if len(cells) not in (6, 7):  # not an options row (required mark optional)
        return cells
    at = len(cells) - 6
    long, secondary = cells[at], cells[at + 2]
    if isinstance(long, Text) and isinstance(secondary, Text) and secondary.plain:
        cells[at] = Text.assemble(long, "\n", secondary)
        cells[at + 2] = Text("")
    return cells


def _names(cells: Any) -> bool:
    """True for a column of option names (``--x``, ``-x``) and blanks."""
    texts = [str(cell) for cell in cells]
    return any(texts) and all(not t or t.startswith("-") for t in texts)


def install() -> None:
    """Lay out every later ``--help`` with whole option names."""
    typer.rich_utils.Table = _HelpTable  # type: ignore[attr-defined]
