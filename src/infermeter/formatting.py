"""How tables print numbers: fixed decimals that never round a small figure to 0.

``format_number(0.031)`` is ``0.031``, not ``0.0``: a value that the fixed
decimals would print as zero keeps two significant digits. ``format_figure``
prints a derived figure (a cost, a ratio) at a precision that suits its size
instead of Python's full float repr.
"""

from __future__ import annotations


def format_number(value: float | None, digits: int = 1) -> str:
    """``digits`` decimals with thousands separators; small non-zero values keep
    two significant digits; None is ``-``."""
    if value is None:
        return "-"
    if value != 0 and abs(value) < 0.5 * 10.0**-digits:
        return f"{value:.2g}"
    return f"{value:,.{digits}f}"


def format_figure(value: object) -> str:
    """A table cell: floats at a precision that suits their size, others as text."""
    if isinstance(value, bool) or not isinstance(value, float):
        return "-" if value is None else str(value)
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 1:
        return f"{value:,.2f}"
    return format_number(value, 3)
