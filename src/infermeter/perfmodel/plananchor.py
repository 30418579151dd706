"""A plan's anchors: what the published rows of its benchmark say of the calibrated
model on its part and stack (``anchor.Anchors.level``), read once per fit and
benchmark from the rounds the fit read (``../shared``; without them a plan is
modelled, and says so)."""

from __future__ import annotations

from functools import lru_cache

from infermeter.perfmodel.anchor import Anchor, Anchors
from infermeter.perfmodel.calibrate import DEFAULT_FIT, fit_rows, load_coefficients
from infermeter.perfmodel.fit import prepare
from infermeter.perfmodel.specs import get_workload


@lru_cache(maxsize=16)
def _anchors(fit: str, benchmark: str) -> Anchors | None:
    coef = load_coefficients(fit)
    rows = fit_rows(coef)
    if rows is None:
        return None
    keep = [r for r in rows.rows if get_workload(r.benchmark).key == benchmark]
    prepared, _ = prepare(keep)
    return Anchors(prepared, coef)


def plan_level(
    fit: str | None, benchmark: str, scenario: str, part: str, stack: str
) -> tuple[float, tuple[Anchor, ...]]:
    """The factor a plan's calibrated rate takes from its anchors, and the anchors
    (1.0 and none: modelled)."""
    found = _anchors(fit or DEFAULT_FIT, get_workload(benchmark).key)
    if found is None:
        return 1.0, ()
    return found.level(benchmark, scenario, part, stack)


def named(anchors: tuple[Anchor, ...], shown: int = 3) -> tuple[str, ...]:
    """The heaviest anchors' result IDs with their nearness, as a plan names them."""
    from infermeter.perfmodel.anchor import NEARNESS

    top = sorted(anchors, key=lambda a: -a.weight)[:shown]
    return tuple(f"{a.result_id} ({NEARNESS[a.nearness]})" for a in top)
