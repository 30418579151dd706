"""Curves as MLPerf Endpoints publishes them, and their differences per region.

A curve is one endpoint's points (concurrency, system_tps, tps_per_user, TTFT p90).
Its published form is a step function: at per-user speed x, the most system tokens/s
any point reaches while serving each user at least x tokens/s,
``f(x) = max(system_tps_i for tps_per_user_i >= x)``. Per region of interest (§5.5,
by each curve's own C_max and C_min), two curves compare by *height* (the most
tokens/s among the region's points) and *area* (the integral of f over the region's
per-user speeds on the first curve: from its region's fastest point down to the
fastest point of any higher region, or to 0 for High; the spans tile the axis, so
the areas add up to the whole curve's). Points come from
``endpoints run`` / ``sweep --concurrency`` folders or a packaged curve folder
(``results/<system>/<model>``, its ``r<N>/result_summary.json``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.runs.endpoints_files import percentile
from infermeter.runs.endpoints_package import read_points
from infermeter.runs.endpoints_rules import (
    REGION_LABELS,
    Regions,
    compute_regions,
    derived_c_min,
)

COMPARED = ("low_latency", "low_concurrency", "med_concurrency", "high_concurrency")


@dataclass(frozen=True, slots=True)
class CurvePoint:
    concurrency: int
    system_tps: float
    tps_per_user: float
    ttft_p90_ms: float | None


@dataclass(frozen=True, slots=True)
class Curve:
    """One labelled curve and its regions."""

    label: str
    points: list[CurvePoint]
    regions: Regions

    def region_of(self, p: CurvePoint) -> str:
        return self.regions.region_of(p.concurrency) or "beyond"

    def step(self, x: float) -> float:
        """The published step function at per-user speed ``x``."""
        return max(
            (p.system_tps for p in self.points if p.tps_per_user >= x), default=0.0
        )

    def staircase(self) -> tuple[list[float], list[float]]:
        """Coordinates that draw ``step`` from the slowest to the fastest point."""
        xs = sorted({p.tps_per_user for p in self.points})
        out_x: list[float] = []
        out_y: list[float] = []
        left = 0.0
        for x in xs:
            y = self.step(x)
            out_x += [left, x]
            out_y += [y, y]
            left = x
        return out_x, out_y

    def area(self, lo: float, hi: float) -> float:
        """Integral of ``step`` over [lo, hi] (exact: it is piecewise constant)."""
        cuts = sorted(
            {lo, hi, *(p.tps_per_user for p in self.points if lo < p.tps_per_user < hi)}
        )
        return sum(self.step(b) * (b - a) for a, b in itertools.pairwise(cuts))


def point_of(summary: dict[str, Any], concurrency: int) -> CurvePoint | None:
    """The curve figures of one result_summary.json (ns units), or None."""
    duration = float(summary.get("duration_ns") or 0)
    tokens = float((summary.get("output_sequence_lengths") or {}).get("total", 0))
    tpot = percentile(summary.get("tpot"), 90.0)
    ttft = percentile(summary.get("ttft"), 90.0)
    if duration <= 0 or not tpot:
        return None
    return CurvePoint(
        concurrency,
        tokens / (duration / 1e9),
        1000.0 / (float(tpot) / 1e6),
        None if ttft is None else float(ttft) / 1e6,
    )


def load_curve(path: Path, label: str | None = None, c_max: int | None = None) -> Curve:
    """A curve from a run/sweep folder or a packaged ``results/<system>/<model>``."""
    pairs = _packaged(path) or [(p.concurrency, p.summary) for p in read_points([path])]
    points = [pt for c, s in pairs if (pt := point_of(s, c)) is not None]
    if not points:
        raise ConfigError(f"{path}: no point reports output tokens and TPOT p90.")
    levels = [p.concurrency for p in points]
    regions = compute_regions(c_max or max(levels), derived_c_min(levels))
    return Curve(
        label or path.name, sorted(points, key=lambda p: p.concurrency), regions
    )


def _packaged(path: Path) -> list[tuple[int, dict[str, Any]]]:
    found = []
    for summary in sorted(path.glob("r*/result_summary.json")):
        name = summary.parent.name
        if name[1:].isdigit():
            found.append(
                (int(name[1:]), json.loads(summary.read_text(encoding="utf-8")))
            )
    return found


def region_spans(curve: Curve) -> dict[str, tuple[float, float]]:
    """Each region's per-user speeds on ``curve`` (see the module's docstring)."""
    spans: dict[str, tuple[float, float]] = {}
    for i, region in enumerate(COMPARED):
        xs = [p.tps_per_user for p in curve.points if curve.region_of(p) == region]
        if not xs:
            continue
        above = COMPARED[i + 1 :]
        higher = [p.tps_per_user for p in curve.points if curve.region_of(p) in above]
        spans[region] = (max(higher, default=0.0), max(xs))
    return spans


def region_table(curves: list[Curve]) -> list[dict[str, Any]]:
    """Per region: each curve's height and area, and each later curve against the first."""
    rows = []
    for region, (lo, hi) in region_spans(curves[0]).items():
        row: dict[str, Any] = {
            "region": REGION_LABELS[region],
            "tps_per_user_span": [round(lo, 3), round(hi, 3)],
        }
        for i, c in enumerate(curves):
            tops = [p.system_tps for p in c.points if c.region_of(p) == region]
            row[f"height_{i}"] = max(tops) if tops else None
            row[f"area_{i}"] = c.area(lo, hi) if hi > lo else None
        for i in range(1, len(curves)):
            row[f"height_diff_{i}"] = _rel(row[f"height_{i}"], row["height_0"])
            row[f"area_diff_{i}"] = _rel(row[f"area_{i}"], row["area_0"])
        rows.append(row)
    return rows


def _rel(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return (value - base) / base


def chart_data(
    curves: list[Curve],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Plain data for report/endpoints_chart.py: the curves, and the first curve's
    region bands (its ``region_spans``)."""
    plain = []
    for c in curves:
        step_x, step_y = c.staircase()
        points = [
            {
                "concurrency": p.concurrency,
                "system_tps": p.system_tps,
                "tps_per_user": p.tps_per_user,
                "ttft_p90_ms": p.ttft_p90_ms,
                "region": REGION_LABELS.get(c.region_of(p), "beyond C_max + 10 %"),
            }
            for p in c.points
        ]
        plain.append(
            {"label": c.label, "step_x": step_x, "step_y": step_y, "points": points}
        )
    bands = [
        {"region": REGION_LABELS[region], "span": [lo, hi]}
        for region, (lo, hi) in region_spans(curves[0]).items()
        if hi > lo
    ]
    return plain, bands


def table_text(curves: list[Curve], rows: list[dict[str, Any]]) -> list[list[str]]:
    """The region table as text cells: a header, then one line per region."""
    head = ["region", "tok/s/user span"]
    for c in curves:
        head += [f"height {c.label}", f"area {c.label}"]
    out = [head]
    for row in rows:
        lo, hi = row["tps_per_user_span"]
        cells = [row["region"], f"{lo:,.1f}-{hi:,.1f}"]
        for i in range(len(curves)):
            cells.append(_fig(row[f"height_{i}"], row.get(f"height_diff_{i}")))
            cells.append(_fig(row[f"area_{i}"], row.get(f"area_diff_{i}")))
        out.append(cells)
    return out


def _fig(value: float | None, diff: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" + ("" if diff is None else f" ({diff:+.1%})")


def report_view(curves: list[Curve]) -> dict[str, Any]:
    """What ``infermeter report`` draws of curves (plain data for report/html.py):
    the curves and their bands (``chart_data``), the region table as text cells."""
    plain, bands = chart_data(curves)
    return {
        "curves": plain,
        "bands": bands,
        "table": table_text(curves, region_table(curves)),
    }


def curve_folders(paths: list[Path]) -> tuple[list[Curve], list[Path]]:
    """The folders that hold a fixed-concurrency curve, as curves labelled by their
    names (or whole paths when two names clash), and the others as given."""
    curves: list[Curve] = []
    others: list[Path] = []
    clash = len({p.name for p in paths}) < len(paths)
    for path in paths:
        try:
            curves.append(load_curve(path, str(path) if clash else None))
        except ConfigError:  # rate points, a run of another kind: not a curve
            others.append(path)
    return curves, others
