"""Top-1 / top-5 classification accuracy.

top-k = 100 x |{i : label_i in the first k predicted classes of sample i}| / N.
A response holds class indices best first (the MLPerf ResNet-50 script reads
only the first element, so top-1 matches ``accuracy-imagenet.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def top_k(
    predictions: Sequence[npt.NDArray[np.generic]], labels: Sequence[int], k: int
) -> float:
    """Percentage of samples whose label is among the first ``k`` predictions."""
    if len(predictions) != len(labels):
        raise ValueError("predictions and labels differ in length")
    if not predictions:
        return 0.0
    hits = 0
    for pred, label in zip(predictions, labels, strict=True):
        best = np.asarray(pred).ravel()[:k].astype(np.int64)
        hits += int(label in best.tolist())
    return 100.0 * hits / len(predictions)
