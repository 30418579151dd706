"""Remote clients' clocks against the coordinator's: offset and uncertainty by round trips.

The client reads its clock between two stamps of ours, so the offset lies in
[t0 - r, t1 - r]; the ping with the shortest round trip bounds it best.
Measured before the run and again at its end: the drift between the two adds
to how far a corrected stamp may be off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PINGS = 16


@dataclass(slots=True)
class ClockSync:
    """One client's clock against the coordinator's: coordinator = client + offset."""

    offset_ns: int = 0
    uncertainty_ns: int = 0
    shared: bool = False  # same kernel clock: no correction needed
    end_offset_ns: int | None = None
    end_uncertainty_ns: int | None = None

    @property
    def error_bound_ns(self) -> int:
        """How far a corrected stamp may be off: the measurement plus any drift."""
        if self.shared:
            return 0
        end_u = self.end_uncertainty_ns or 0
        drift = abs((self.end_offset_ns or self.offset_ns) - self.offset_ns)
        return max(self.uncertainty_ns, end_u) + drift

    def as_dict(self) -> dict[str, Any]:
        return {
            "offset_ns": self.offset_ns,
            "uncertainty_ns": self.uncertainty_ns,
            "end_offset_ns": self.end_offset_ns,
            "end_uncertainty_ns": self.end_uncertainty_ns,
            "shared_clock": self.shared,
            "error_bound_ns": self.error_bound_ns,
        }


def measure_offset(
    remote_now: Callable[[], int], pings: int = PINGS
) -> tuple[int, int]:
    """(offset, uncertainty) ns from the ping with the shortest round trip.

    The client read its clock between our t0 and t1, so the true offset lies in
    [t0 - r, t1 - r]: the midpoint, give or take half the round trip.
    """
    best: tuple[int, int] | None = None
    for _ in range(pings):
        t0 = time.perf_counter_ns()
        remote = int(remote_now())
        t1 = time.perf_counter_ns()
        if best is None or t1 - t0 < best[0]:
            best = (t1 - t0, (t0 + t1) // 2 - remote)
    assert best is not None
    return best[1], (best[0] + 1) // 2
