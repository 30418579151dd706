"""The MLPerf Endpoints v1.0 rules a curve's points must meet (facts, not the checker's code).

Sources: ``endpoints_rules.md`` (mlcommons/endpoints_policies) as the official
``submission-checker`` (PyPI ``endpoints-submission-cli`` 1.5.3) applies it:

* §5.5 regions: ``interval = log2(C_max - C_min) / 3``; Low Concurrency ends at
  ``round(C_min + 2**interval)``, Medium at ``round(C_min + 2**(2 * interval))``,
  High at ``C_max``; a 10 % margin above it ends at ``ceil(1.10 * C_max)``. ``round``
  is Python's (half to even), as §5.5 says. C_max must be above 32; C_min is the
  lowest point, clamped to 32 (or a declared override in 1..32).
* §5.3 / §9.1 counts: 7 to 32 points (1 + 3 + 3: one Ultra Low point, one in each of
  Low, Medium and High, three of the submitter's choice); a point in the margin
  covers no region; no point beyond the margin.
* §6.2 minimum steady-state duration: 600 s at concurrency <= 32 (Ultra Low), 1,200 s
  above (2,400 s for agentic benchmarks).
* §4.4: the steady-state window spans whole dataset passes ("super-passes"); a window
  the rules call ``windowable`` spans at least 4 of them.
* §4.6 seed sets: the published set of cohort 2026-10-C1 (checker's ``seed_sets.yaml``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infermeter.errors import ConfigError

ULTRA_LOW_MAX = 32
MIN_POINTS = 7
MAX_POINTS = 32
MIN_TREND_PASSES = 4  # §4.4 MIN_TREND_N: super-passes a windowable window spans
REGION_NAMES = (
    "low_latency",
    "low_concurrency",
    "med_concurrency",
    "high_concurrency",
    "margin",
)
REGION_LABELS = {
    "low_latency": "Ultra Low",
    "low_concurrency": "Low",
    "med_concurrency": "Medium",
    "high_concurrency": "High",
    "margin": "margin (10 % above C_max)",
}
# §4.6: published seed sets by id (cohort 2026-10-C1): scheduler, sample index, model.
SEED_SETS: dict[str, dict[str, int]] = {
    "A": {
        "scheduler_rng_seed": 10487924139932647040,
        "sample_index_rng_seed": 586478644936801402,
        "model_seed": 9315206023656308754,
    }
}
SEED_COHORT = "2026-10-C1"


@dataclass(frozen=True, slots=True)
class Bounds:
    """An inclusive concurrency range; ``start > end`` is a zero-width region."""

    start: int
    end: int

    def contains(self, concurrency: int) -> bool:
        return self.start <= concurrency <= self.end

    def __str__(self) -> str:
        if self.start > self.end:
            return f"empty ({self.start}-{self.end})"
        return f"{self.start}-{self.end}"


@dataclass(frozen=True, slots=True)
class Regions:
    """The §5.5 regions of one curve, in ascending order of concurrency."""

    c_max: int
    c_min: int
    low_latency: Bounds
    low_concurrency: Bounds
    med_concurrency: Bounds
    high_concurrency: Bounds
    margin: Bounds

    def items(self) -> list[tuple[str, Bounds]]:
        return [(name, getattr(self, name)) for name in REGION_NAMES]

    def region_of(self, concurrency: int) -> str | None:
        """The first region holding ``concurrency``; None beyond the margin."""
        for name, bounds in self.items():
            if bounds.contains(concurrency):
                return name
        return None


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule a point list breaks: the checker's rule id, its section and why."""

    rule: str
    section: str
    text: str

    def __str__(self) -> str:
        return f"{self.rule} ({self.section}): {self.text}"


def compute_regions(c_max: int, c_min: int) -> Regions:
    """§5.5's boundaries for ``(C_max, C_min)``."""
    if not 1 <= c_min <= ULTRA_LOW_MAX:
        raise ConfigError(f"--c-min must be in 1..{ULTRA_LOW_MAX} (got {c_min}).")
    if c_max <= ULTRA_LOW_MAX:
        raise ConfigError(
            f"--c-max must be above {ULTRA_LOW_MAX} (§5.5; got {c_max}): a curve "
            "needs Low, Medium and High regions above the Ultra Low range."
        )
    interval = math.log2(c_max - c_min) / 3
    # round() is half-to-even, exactly as §5.5 prescribes.
    low_end = round(c_min + 2**interval)
    med_end = round(c_min + 2 ** (2 * interval))
    return Regions(
        c_max=c_max,
        c_min=c_min,
        low_latency=Bounds(1, c_min),
        low_concurrency=Bounds(c_min + 1, low_end),
        med_concurrency=Bounds(low_end + 1, med_end),
        high_concurrency=Bounds(med_end + 1, c_max),
        margin=Bounds(c_max + 1, math.ceil(1.10 * c_max)),
    )


def derived_c_min(points: list[int]) -> int:
    """C_min as the checker derives it: the lowest point, clamped to 32."""
    return min(min(points), ULTRA_LOW_MAX)


def min_duration_s(concurrency: int, *, agentic: bool = False) -> int:
    """§6.2's minimum steady-state window (issue time) of a point."""
    if concurrency <= ULTRA_LOW_MAX:
        return 600
    return 2400 if agentic else 1200


def violations(points: list[int], c_max: int) -> list[Violation]:
    """Every §5.3 / §5.4 / §9.1 rule the point list breaks (empty: legal)."""
    found: list[Violation] = []
    if any(c < 1 for c in points):
        found.append(
            Violation("load-pattern", "§6.1", "every concurrency must be >= 1")
        )
        return found
    if len(set(points)) != len(points):
        found.append(Violation("point-dirs", "§8.1", "a concurrency is listed twice"))
    n = len(set(points))
    if n < MIN_POINTS:
        found.append(
            Violation(
                "point-count", "§5.3", f"{n} points; at least {MIN_POINTS} (1 + 3 + 3)"
            )
        )
    if n > MAX_POINTS:
        found.append(
            Violation("point-cap", "§5.3", f"{n} points; at most {MAX_POINTS}")
        )
    if c_max <= ULTRA_LOW_MAX:
        text = f"C_max {c_max} must be above {ULTRA_LOW_MAX}"
        return [*found, Violation("region-computation", "§5.5", text)]
    regions = compute_regions(c_max, derived_c_min(points))
    if not any(c <= ULTRA_LOW_MAX for c in points):
        found.append(
            Violation(
                "ultra-low-concurrency-coverage",
                "§5.4",
                f"no point at concurrency <= {ULTRA_LOW_MAX}",
            )
        )
    for name in ("low_concurrency", "med_concurrency", "high_concurrency"):
        bounds: Bounds = getattr(regions, name)
        if not any(bounds.contains(c) for c in points):
            found.append(
                Violation(
                    f"{name.split('_')[0]}-concurrency-coverage",
                    "§5.5",
                    f"no point in the {REGION_LABELS[name]} region ({bounds})",
                )
            )
    beyond = [c for c in points if c > regions.margin.end]
    if beyond:
        found.append(
            Violation(
                "concurrency-in-range",
                "§5.4",
                f"{beyond} beyond C_max + 10 % ({regions.margin.end})",
            )
        )
    return found


def check_points(points: list[int], c_max: int) -> Regions:
    """The regions of a legal list; a ConfigError naming every broken rule otherwise."""
    found = violations(points, c_max)
    if found:
        raise ConfigError(
            "illegal MLPerf Endpoints point list: "
            + "; ".join(str(v) for v in found)
            + ". Fix the list or drop --concurrency to let the planner choose."
        )
    return compute_regions(c_max, derived_c_min(points))


def choose_points(c_max: int, c_min: int, count: int = MIN_POINTS) -> list[int]:
    """``count`` legal levels: C_min, one in the middle of each region, C_max, then
    log-spaced fill (the curve's steps come out evenly on a log axis)."""
    if not MIN_POINTS <= count <= MAX_POINTS:
        raise ConfigError(
            f"--points must be in {MIN_POINTS}..{MAX_POINTS} (got {count})."
        )
    regions = compute_regions(c_max, c_min)
    chosen = {c_min, c_max}
    for name in ("low_concurrency", "med_concurrency", "high_concurrency"):
        bounds: Bounds = getattr(regions, name)
        if bounds.start > bounds.end:
            raise ConfigError(
                f"the {REGION_LABELS[name]} region is empty for C_max {c_max}, "
                f"C_min {c_min} ({bounds}); lower --c-min (e.g. 1)."
            )
        chosen.add(round(math.sqrt(bounds.start * bounds.end)))
    chosen |= set(_log_fill(c_min, c_max, count - len(chosen), chosen))
    if len(chosen) < count:
        raise ConfigError(
            f"only {len(chosen)} distinct levels fit between {c_min} and {c_max}; "
            f"ask for fewer --points."
        )
    points = sorted(chosen)
    check_points(points, c_max)
    return points


def _log_fill(lo: int, hi: int, want: int, taken: set[int]) -> list[int]:
    """``want`` new levels, log-spaced in (lo, hi), none of them in ``taken``."""
    if want <= 0:
        return []
    for steps in range(want + 1, 8 * want + 64):
        grid = {round(lo * (hi / lo) ** (k / steps)) for k in range(1, steps)}
        free = sorted(c for c in grid - taken if lo < c < hi)
        if len(free) >= want:  # evenly spread picks keep the log spacing
            last = len(free) - 1
            return [free[round(i * last / max(1, want - 1))] for i in range(want)]
    # a narrow range: every free level there is
    return sorted(set(range(lo + 1, hi)) - taken)[:want]


def accuracy_levels(levels: list[int], regions: Regions) -> list[int]:
    """§5.3's N points: the lowest level (C_min, the Ultra Low point), the lowest
    level in Low and in Medium, and C_max (the elected Offline point, which also
    fills High; else the lowest level in High)."""
    chosen = [min(levels)]
    for bounds in (regions.low_concurrency, regions.med_concurrency):
        inside = [c for c in levels if bounds.contains(c) and c not in chosen]
        if inside:
            chosen.append(min(inside))
    high = [c for c in levels if regions.high_concurrency.contains(c)]
    if regions.c_max in levels:
        chosen.append(regions.c_max)
    elif high:
        chosen.append(min(high))
    return sorted(set(chosen))
