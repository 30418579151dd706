"""Click-through AUC and accuracy with scikit-learn, as MLPerf's accuracy-dlrm.py.

A response holds float32 ``(prediction, label)`` pairs, one per user-item pair
of the sample (the reference harness logs the ground truth beside each
prediction); a response of only predictions takes its labels from the dataset.
AUC = 100 x ``roc_auc_score(labels, predictions)`` over every pair of every
sample; accuracy = 100 x |round(prediction) == label| / pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from infermeter.errors import DatasetError
from infermeter.workloads.accuracy.optional import require

FloatArray = npt.NDArray[np.float32]


def split_pairs(
    data: FloatArray, labels: FloatArray | None, qsl_idx: int
) -> tuple[FloatArray, FloatArray]:
    """(predictions, labels) of one response; ``labels`` from the dataset if needed."""
    if labels is not None and data.size == labels.size:
        return data, labels
    if data.size % 2:
        raise DatasetError(
            f"Response of sample {qsl_idx} has {data.size} values, not (prediction, "
            "label) pairs; pass --dtype float32 or the dataset's labels."
        )
    pairs = data.reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def click_metrics(
    predictions: Sequence[FloatArray], labels: Sequence[FloatArray]
) -> dict[str, float]:
    """``{"auc", "accuracy"}`` in percent over all pairs."""
    metrics = require("sklearn.metrics")
    pred = np.concatenate(predictions).astype(np.float64)
    truth = np.concatenate(labels).astype(np.float64)
    if np.unique(truth).size < 2:
        raise DatasetError("AUC needs both clicked and not-clicked pairs in the log.")
    auc = float(metrics.roc_auc_score(truth, pred))
    accuracy = float(np.mean(np.round(pred) == truth))
    return {"auc": 100.0 * auc, "accuracy": 100.0 * accuracy}


def encode_clicks(labels: FloatArray, *, flip: bool = False) -> bytes:
    """The response a perfect (or, flipped, a perfectly wrong) model gives."""
    pred = 1.0 - labels if flip else labels
    return np.stack([pred, labels], axis=1).astype(np.float32).tobytes()
