"""A point's §4.4 ``steady_state`` block, judged as the official checker judges it.

The run is cut into super-passes: consecutive queries in issue order, one dataset
pass each. The window spans every whole pass of the measured run (the warmup is a
separate, excluded run); its duration is **issue time**, first to last issue, so the
drain never counts towards §6.2's minimum. Each gating metric (TTFT and TPOT at P50
and P90) is a Plateau when a least-squares line through its per-pass values moves
less than ``DRIFT_TOLERANCE`` of its median across the window, else Drifting Up or
Down. This is infermeter's detector, simpler than the reference client's; the
checker cannot run any detector (no event log is submitted) and checks only that
the block is consistent, which these rules keep it:

* ``windowable`` (the official basis) needs >= 4 passes (MIN_TREND_N), a window of at
  least §6.2's minimum, and every gating metric a Plateau;
* fewer passes: ``insufficient_passes``; a short window: ``insufficient_duration``;
  a drifting metric over enough passes also reports ``insufficient_duration`` (a
  longer run may reach a plateau) with a ``drifting_up`` / ``drifting_down`` verdict.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.runs.endpoints_rules import MIN_TREND_PASSES

DRIFT_TOLERANCE = 0.10  # of the metric's median, over the whole window
GATING = (("ttft", 50.0), ("ttft", 90.0), ("tpot", 50.0), ("tpot", 90.0))
I64 = npt.NDArray[np.int64]


def steady_state(
    issued_ns: I64,
    ttft_ns: I64,
    tpot_ns: I64,
    *,
    pass_size: int,
    min_window_s: float,
) -> dict[str, Any]:
    """The block of one point. Arrays are per query in issue order; -1 = not measured."""
    passes = len(issued_ns) // pass_size if pass_size > 0 else 0
    used = passes * pass_size
    issued = issued_ns[:used]
    span_s = float(issued.max() - issued.min()) / 1e9 if used > 1 else 0.0
    series = {"ttft": ttft_ns[:used], "tpot": tpot_ns[:used]}
    states = {
        f"{name}_p{q:g}": _trend(_per_pass(series[name], pass_size, q))
        for name, q in GATING
    }
    drifting = sorted({s for s in states.values() if s != "Plateau"})
    if passes < MIN_TREND_PASSES:
        status, verdict = "insufficient_passes", "not found"
    elif drifting:
        status = "insufficient_duration"
        verdict = "drifting_up" if "Drifting Up" in drifting else "drifting_down"
    elif span_s < min_window_s:
        status, verdict = "insufficient_duration", "STEADY STATE"
    else:
        status, verdict = "windowable", "STEADY STATE"
    return {
        "status": status,
        "verdict": verdict,
        "window": {
            "super_pass_start": 1 if passes else None,
            "super_pass_end": passes if passes else None,
            "super_pass_size": pass_size,
            "n_samples": int((ttft_ns[:used] >= 0).sum()),
            "duration_s": round(span_s, 6),
        },
        "state": states,
        "detector": "infermeter: least-squares trend of per-pass P50/P90, "
        f"plateau within {DRIFT_TOLERANCE:.0%} of the median",
    }


def _per_pass(series: I64, pass_size: int, q: float) -> list[float]:
    out: list[float] = []
    for start in range(0, len(series), pass_size):
        chunk = series[start : start + pass_size]
        chunk = chunk[chunk >= 0]
        if chunk.size:
            out.append(float(np.percentile(chunk, q, method="higher")))
    return out


def _trend(values: list[float]) -> str:
    """Plateau, Drifting Up or Drifting Down over the passes' values."""
    if len(values) < 2:
        return "Plateau"
    y = np.asarray(values)
    slope = float(np.polyfit(np.arange(y.size, dtype=float), y, 1)[0])
    middle = float(np.median(y))
    change = slope * (y.size - 1) / middle if middle > 0 else 0.0
    if abs(change) <= DRIFT_TOLERANCE:
        return "Plateau"
    return "Drifting Up" if change > 0 else "Drifting Down"
