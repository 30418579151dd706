"""Compatibility with MLPerf LoadGen, both ways.

``infermeter.compat.mlperf_loadgen`` is the official Python API over the native
engine; ``infermeter.compat.official`` runs infermeter SUTs on the official wheel.
"""

from __future__ import annotations

__all__ = ["install", "uninstall"]


def install() -> None:
    """Make ``import mlperf_loadgen`` give ``infermeter.compat.mlperf_loadgen`` (opt-in)."""
    from infermeter.compat.shim import install as _install

    _install()


def uninstall() -> None:
    """Undo ``install()``: ``import mlperf_loadgen`` finds the official wheel again."""
    from infermeter.compat.shim import uninstall as _uninstall

    _uninstall()
