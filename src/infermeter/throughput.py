"""The one definition of a run's samples/s and tokens/s, and how it is printed.

MLPerf runs use MLPerf's: Offline over the whole run (samples or tokens over
the time to the last completion), Server over the span from the start to the
completion of the last issued query; SingleStream / MultiStream report
queries over the time to the last issue. ``infermeter run`` computes them
once (run.json ``metrics``); ``diff``, ``compare`` and ``report`` read those
figures and state the same definition. Endpoint sweeps have their own
(tokens of completed requests over the time to the last completion).
"""

from __future__ import annotations

from typing import Any

_SAMPLES = {
    "Offline": "MLPerf Offline: completed samples over the whole run "
    "(start to the last completion)",
    "Server": "MLPerf Server: completed samples - 1 over the span from the start "
    "to the completion of the last issued query",
    "SingleStream": "MLPerf SingleStream: queries - 1 over the time to the last issue",
    "MultiStream": "MLPerf MultiStream: queries - 1 over the time to the last issue",
}
_TOKENS = {
    "Offline": "MLPerf Offline: output tokens of completed samples over the whole "
    "run (start to the last completion)",
    "Server": "MLPerf Server: output tokens of completed samples over the span from "
    "the start to the completion of the last issued query",
}
SWEEP = (
    "output tokens of completed requests over the time from the point's start to "
    "its last completion"
)


def definition(scenario: str, *, tokens: bool) -> str:
    """How the run's headline rate is computed, in one line."""
    table = _TOKENS if tokens else _SAMPLES
    return table.get(scenario) or _SAMPLES.get(scenario, f"{scenario}: see run.json")


def format_rate(value: float) -> str:
    """Every command prints a rate the same way."""
    return f"{value:,.2f}"


def run_rate(metrics: dict[str, Any], *, tokens: bool) -> float | None:
    """The run's own figure from run.json ``metrics``."""
    value = metrics.get("tokens_per_second" if tokens else "samples_per_second")
    return None if value is None else float(value)
