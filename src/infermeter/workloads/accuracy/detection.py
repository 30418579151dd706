"""Object-detection mAP with pycocotools, as MLPerf's accuracy-coco.py / -openimages.py.

A response is float32 rows of 7: ``qsl_idx, ymin, xmin, ymax, xmax, score,
category`` with coordinates normalised to [0, 1]; an empty (or < 7 value)
response is an image with no detections. Boxes are scaled by the image size,
turned into COCO ``[x, y, w, h]``, and ``COCOeval`` (bbox) runs over the images
seen in the log. mAP = 100 x AP@[IoU 0.50:0.95] (``stats[0]``).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.workloads.accuracy.optional import require
from infermeter.workloads.datasets.base import Boxes

ROW = 7


def _ground_truth(refs: Mapping[int, Boxes]) -> dict[str, Any]:
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    categories: set[int] = set()
    for ref in refs.values():
        images.append({"id": ref.image_id, "width": ref.width, "height": ref.height})
        scale = np.asarray([ref.width, ref.height, ref.width, ref.height])
        crowd = ref.iscrowd if ref.iscrowd is not None else np.zeros(len(ref.labels))
        for box, label, is_crowd in zip(
            ref.boxes * scale, ref.labels, crowd, strict=True
        ):
            x0, y0, x1, y1 = (float(v) for v in box)
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": ref.image_id,
                    "category_id": int(label),
                    "bbox": [x0, y0, x1 - x0, y1 - y0],
                    "area": (x1 - x0) * (y1 - y0),
                    "iscrowd": int(is_crowd),
                }
            )
            categories.add(int(label))
    return {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": c} for c in sorted(categories)],
    }


def _detections(
    responses: Sequence[tuple[int, npt.NDArray[np.float32]]], refs: Mapping[int, Boxes]
) -> list[dict[str, Any]]:
    found = []
    for qsl_idx, data in responses:
        ref = refs[qsl_idx]
        rows = data[: data.size - data.size % ROW].reshape(-1, ROW)
        for _, ymin, xmin, ymax, xmax, score, label in rows.tolist():
            x0, x1 = xmin * ref.width, xmax * ref.width
            y0, y1 = ymin * ref.height, ymax * ref.height
            found.append(
                {
                    "image_id": ref.image_id,
                    "category_id": int(label),
                    "bbox": [x0, y0, x1 - x0, y1 - y0],
                    "score": score,
                }
            )
    return found


def mean_average_precision(
    responses: Sequence[tuple[int, npt.NDArray[np.float32]]], refs: Mapping[int, Boxes]
) -> float:
    """mAP in percent of ``responses`` ((qsl_idx, float32 rows)) against ``refs``."""
    coco = require("pycocotools.coco")
    cocoeval = require("pycocotools.cocoeval")
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints progress
        truth = coco.COCO()
        truth.dataset = _ground_truth(refs)
        truth.createIndex()
        found = _detections(responses, refs)
        if not found:
            return 0.0
        results = truth.loadRes(found)
        evaluator = cocoeval.COCOeval(truth, results, iouType="bbox")
        evaluator.params.imgIds = sorted({refs[i].image_id for i, _ in responses})
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return 100.0 * max(0.0, float(evaluator.stats[0]))


def encode_detections(qsl_idx: int, ref: Boxes, scores: float = 1.0) -> bytes:
    """The response a perfect detector gives for ``ref`` (the fake SUT's answer)."""
    rows = [
        [qsl_idx, y0, x0, y1, x1, scores, label]
        for (x0, y0, x1, y1), label in zip(
            ref.boxes.tolist(), ref.labels.tolist(), strict=True
        )
    ]
    return np.asarray(rows, dtype=np.float32).tobytes()
