"""Qwen3-VL category hierarchical F1, as the reference's task.py computes it.

A response is UTF-8 JSON ``{"category": "a > b > c", "brand": ..., "is_secondhand":
...}``. Per sample, the intersection is the longest common prefix of the
predicted and true category paths (levels split on " > "); an unparsable
response predicts as many levels as the truth with none right. Over the log,
hP = sum(intersections) / sum(predicted levels), hR = sum(intersections) /
sum(true levels), and F1 = 2 hP hR / (hP + hR) (a fraction).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

SEPARATOR = " > "


def predicted_category(response: str) -> str | None:
    """The ``category`` of a JSON response (None: not the expected schema)."""
    try:
        data = json.loads(response)
    except json.JSONDecodeError:
        return None
    category = data.get("category") if isinstance(data, dict) else None
    return category if isinstance(category, str) else None


def _components(predicted: str, truth: str) -> tuple[int, int, int]:
    pred = [c.strip() for c in predicted.split(SEPARATOR)]
    true = [c.strip() for c in truth.split(SEPARATOR)]
    common = 0
    for a, b in zip(pred, true, strict=False):
        if a != b:
            break
        common += 1
    return common, len(pred), len(true)


def hierarchical_f1(responses: Sequence[str], truths: Sequence[str]) -> float:
    """Aggregate hierarchical F1 of the category paths."""
    common = n_pred = n_true = 0
    for response, truth in zip(responses, truths, strict=True):
        category = predicted_category(response)
        if category is None:  # the reference pads: same depth, nothing right
            depth = len(truth.split(SEPARATOR))
            n_pred, n_true = n_pred + depth, n_true + depth
            continue
        c, p, t = _components(category, truth)
        common, n_pred, n_true = common + c, n_pred + p, n_true + t
    hp = common / n_pred if n_pred else 0.0
    hr = common / n_true if n_true else 0.0
    return 0.0 if hp + hr == 0 else 2 * hp * hr / (hp + hr)


def encode_answer(category: str) -> bytes:
    """A response in the reference's schema."""
    body = {"category": category, "brand": "unknown", "is_secondhand": False}
    return json.dumps(body).encode("utf-8")
