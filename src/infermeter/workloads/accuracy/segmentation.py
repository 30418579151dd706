"""DICE for KiTS19 as MLPerf's accuracy_kits.py defines it.

Per case, one-hot the uint8 masks (0 background, 1 kidney, 2 tumour), drop the
background, and per class DICE = (2 |P & T| + 1e-6) / (|P| + |T| + 1e-6); the
case's composite is the mean of the kidney and tumour scores, and the result is
the mean composite over the cases (NaN counted as 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from infermeter.errors import DatasetError

SMOOTH = 1e-6
CLASSES = (1, 2)  # kidney, tumour


def case_dice(
    prediction: npt.NDArray[np.uint8], target: npt.NDArray[np.uint8]
) -> tuple[float, float]:
    """(kidney, tumour) DICE of one case."""
    if prediction.shape != target.shape:
        raise DatasetError(
            f"Segmentation of shape {prediction.shape} does not match the label's "
            f"{target.shape}."
        )
    scores = []
    for cls in CLASSES:
        pred, true = prediction == cls, target == cls
        inter = float(np.count_nonzero(pred & true))
        total = float(np.count_nonzero(pred) + np.count_nonzero(true))
        scores.append((2.0 * inter + SMOOTH) / (total + SMOOTH))
    return scores[0], scores[1]


def mean_dice(
    predictions: Sequence[npt.NDArray[np.uint8]],
    targets: Sequence[npt.NDArray[np.uint8]],
) -> dict[str, float]:
    """``{"dice", "kidney", "tumour"}``: means over the cases (fractions)."""
    cases = [case_dice(p, t) for p, t in zip(predictions, targets, strict=True)]
    kidney = np.nan_to_num([c[0] for c in cases])
    tumour = np.nan_to_num([c[1] for c in cases])
    return {
        "dice": float(np.mean((kidney + tumour) / 2)),
        "kidney": float(np.mean(kidney)),
        "tumour": float(np.mean(tumour)),
    }
