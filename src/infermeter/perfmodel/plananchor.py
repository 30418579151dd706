"""A plan's anchors: what the published rows of its benchmark say of the calibrated
model on its part and stack (``anchor.Anchors.level``), read once per fit and
benchmark from the rounds the fit read (``../shared``; without them a plan is
modelled, and says so); and the anchored prediction of one system from names
(``system_estimate``: what the report shows beside a run)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from infermeter.errors import ConfigError
from infermeter.perfmodel.anchor import Anchor, Anchors, Estimate
from infermeter.perfmodel.calibrate import DEFAULT_FIT, fit_rows, load_coefficients
from infermeter.perfmodel.fit import predict_log, prepare
from infermeter.perfmodel.published import PublishedRow
from infermeter.perfmodel.specs import (
    PRECISIONS,
    get_accelerator,
    get_model,
    get_workload,
    runs_at,
)

SCENARIOS = ("Offline", "Server", "Interactive")


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


@dataclass(frozen=True, slots=True)
class SystemEstimate:
    """The anchored prediction of a named system and what it assumed."""

    estimate: Estimate
    stack: str
    precision: str
    fit: str


def system_estimate(
    benchmark: str,
    scenario: str,
    part: str,
    count: int,
    *,
    stack: str | None = None,
    precision: str | None = None,
    fit: str | None = None,
) -> SystemEstimate:
    """Tokens/s of ``count`` x ``part`` on ``benchmark`` in ``scenario`` (derived),
    anchored on the published rows of the rounds ``fit`` read (modelled without
    them): on ``stack`` (default: the one the part usually runs), at ``precision``
    (default: the lowest the part runs the model at), with mature software.
    A name the model does not know is a ConfigError naming it."""

    acc, wl = get_accelerator(part), get_workload(benchmark)
    arch = get_model(wl.model)
    if scenario not in SCENARIOS:
        raise ConfigError(
            f"The performance model predicts {', '.join(SCENARIOS)}, not {scenario!r}."
        )
    stack = stack or acc.usual_stack
    precision = precision or next(
        (p for p in PRECISIONS if runs_at(acc, arch, p)), "fp16"
    )
    nodes = max(1, math.ceil(count / max(acc.scaleup_domain, 1)))
    row = PublishedRow(
        result_id="",
        submitter="",
        accelerator=acc.key,
        count=count,
        benchmark=wl.key,
        scenario=scenario,
        tokens_per_s=1.0,  # the target's own value is never read
        stack=stack,
        precision=precision,
        software="",
        nodes=nodes,
    )
    prepared, failed = prepare([row])
    if failed:
        raise ConfigError(failed[0][1])
    name = fit or DEFAULT_FIT
    found = _anchors(name, wl.key)
    if found is None:
        value = math.exp(predict_log(prepared[0], load_coefficients(name)))
        return SystemEstimate(Estimate(value, value), stack, precision, name)
    return SystemEstimate(found.estimate(prepared[0]), stack, precision, name)
