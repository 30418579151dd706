"""Number formats LoadGen's C++ streams produce."""

from __future__ import annotations


def cpp_default(value: float) -> str:
    """``std::ostream << double`` with the default precision (6 significant digits)."""
    return format(value, ".6g")


def fixed2(value: float) -> str:
    """LoadGen's ``DoubleToString(value)``: fixed, 2 decimals."""
    return f"{value:.2f}"


def percent_label(percentile: float) -> str:
    """``90.0th`` style label of a target percentile."""
    return f"{percentile * 100:.1f}th"


def grid_label(percentile: float) -> str:
    """``99.90`` style label of the percentile grid."""
    return f"{percentile * 100:.2f}"
