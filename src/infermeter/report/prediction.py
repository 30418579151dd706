"""The performance model's figure beside a run: what the model predicts for the
run's system (its benchmark, scenario, part and count), the kind of prediction
(anchored on published rows, or modelled) and the anchors by result ID.

A derived figure, never a measurement: the report labels it so. Only for token
runs whose accelerator and count are known (a sim run, ``--gpu``/``--gpus``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infermeter.errors import ConfigError
from infermeter.perfmodel.anchor import NEARNESS, SHOWN
from infermeter.perfmodel.plananchor import system_estimate


def prediction_for(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The model's prediction for ``run`` (a comparison's ``run`` dict: benchmark,
    scenario, accelerator, accelerators, value, unit), or None where the model
    has nothing to say (not a token run, the part or count unknown, a benchmark
    or part the model does not know)."""
    part, count = run.get("accelerator"), run.get("accelerators")
    if run.get("unit") != "tokens/s" or not part or not count:
        return None
    try:
        got = system_estimate(
            str(run.get("benchmark")), str(run.get("scenario")), str(part), int(count)
        )
    except ConfigError:
        return None
    est = got.estimate
    top = sorted(est.anchors, key=lambda a: -a.weight)[:SHOWN]
    value = float(run.get("value") or 0.0)
    return {
        "kind": est.kind,
        "predicted_tokens_s": est.predicted,
        "modelled_tokens_s": est.modelled,
        "pct_of_predicted": 100.0 * value / est.predicted if est.predicted else None,
        "fit": got.fit,
        "stack": got.stack,
        "precision": got.precision,
        "anchor_count": len(est.anchors),
        "anchors": [
            {
                "result_id": a.result_id,
                "round": a.round,
                "nearness": NEARNESS[a.nearness],
                "weight": a.weight,
            }
            for a in top
        ],
        "named": est.named(),
        "derived": ["predicted_tokens_s", "modelled_tokens_s", "pct_of_predicted"],
    }
