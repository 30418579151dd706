"""``infermeter endpoints plan``: the legal points of an MLPerf Endpoints curve, and their cost.

Each point runs a warmup, then a steady-state window of at least §6.2's minimum (issue
time), spanning whole dataset passes (at least one; §4.4's ``windowable`` status, the
official basis, needs 4), then drains. Without a throughput estimate the wall time is
a lower bound: the minimum windows plus the warmups. §5.3's N points (one per
mandatory band; C_max, the elected Offline point, fills High) also need an accuracy
pass each (§4.3), which the campaign time leaves out: its set's size is not known here.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from infermeter.runs.endpoints_rules import (
    REGION_LABELS,
    Regions,
    accuracy_levels,
    check_points,
    choose_points,
    compute_regions,
    min_duration_s,
)


@dataclass(frozen=True, slots=True)
class PlannedPoint:
    """One concurrency level of the curve and what it takes to run it."""

    concurrency: int
    region: str
    min_window_s: int
    min_passes: int  # whole dataset passes the window must span (>= 1)
    qps: float | None = None  # a throughput estimate, when one was given
    window_s: float | None = None  # the window the passes take at that rate
    accuracy: bool = False  # one of §5.3's N points: an accuracy pass follows

    def row(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "region": self.region,
            "min_window_s": self.min_window_s,
            "min_passes": self.min_passes,
            "qps": self.qps,
            "window_s": self.window_s,
            "accuracy_pass": self.accuracy,
        }


@dataclass(frozen=True, slots=True)
class CurvePlan:
    """The regions, the points and the campaign's wall time."""

    regions: Regions
    points: list[PlannedPoint]
    warmup_s: float
    total_s: float
    total_is_lower_bound: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "c_max": self.regions.c_max,
            "c_min": self.regions.c_min,
            "regions": {n: [b.start, b.end] for n, b in self.regions.items()},
            "points": [p.row() for p in self.points],
            "warmup_s": self.warmup_s,
            "total_s": self.total_s,
            "total_is_lower_bound": self.total_is_lower_bound,
        }


def plan_curve(
    c_max: int,
    *,
    c_min: int = 1,
    count: int = 7,
    points: list[int] | None = None,
    warmup_s: float = 60.0,
    dataset_size: int | None = None,
    qps: dict[int, float] | None = None,
) -> CurvePlan:
    """Choose (or check) the levels and cost each; ``qps`` maps a level to an estimate."""
    if points:
        regions = check_points(points, c_max)
        levels = sorted(set(points))
    else:
        levels = choose_points(c_max, c_min, count)
        regions = compute_regions(c_max, levels[0])
    accuracy = set(accuracy_levels(levels, regions))
    planned = [
        dataclasses.replace(
            _point(c, regions, dataset_size, (qps or {}).get(c)), accuracy=c in accuracy
        )
        for c in levels
    ]
    windows = [
        p.window_s if p.window_s is not None else p.min_window_s for p in planned
    ]
    return CurvePlan(
        regions=regions,
        points=planned,
        warmup_s=warmup_s,
        total_s=sum(windows) + warmup_s * len(planned),
        total_is_lower_bound=any(p.window_s is None for p in planned),
    )


def _point(
    c: int, regions: Regions, dataset_size: int | None, qps: float | None
) -> PlannedPoint:
    region = regions.region_of(c) or "beyond"
    floor = min_duration_s(c)
    if qps is None or not qps > 0 or dataset_size is None:
        return PlannedPoint(c, region, floor, 1)
    # whole passes, at least one, issued for at least the minimum window
    passes = max(1, math.ceil(floor * qps / dataset_size))
    return PlannedPoint(c, region, floor, passes, qps, passes * dataset_size / qps)


def region_label(name: str) -> str:
    return REGION_LABELS.get(name, name)
