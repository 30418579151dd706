"""Non-text metric families: decode each response as its reference script does, then score.

Each ``score_*`` takes the deduped log entries and the QSL and returns metric
name -> value. The scorer picks the family from the benchmark's metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from infermeter.errors import DatasetError
from infermeter.workloads.accuracy import (
    clicks,
    detection,
    images,
    segmentation,
    speech,
    vlm,
)
from infermeter.workloads.accuracy.log import LogEntry
from infermeter.workloads.datasets.base import Boxes, DatasetQSL

Values = dict[str, float]


def _references(entries: Sequence[LogEntry], qsl: DatasetQSL, kind: type) -> list[Any]:
    refs = [qsl.reference(e.qsl_idx) for e in entries]
    for entry, ref in zip(entries, refs, strict=True):
        if not isinstance(ref, kind):
            raise DatasetError(
                f"Sample {entry.qsl_idx} of dataset {qsl.name!r} has no "
                f"{kind.__name__} reference; score this log with the benchmark's dataset."
            )
    return refs


def score_detection(entries: Sequence[LogEntry], qsl: DatasetQSL) -> Values:
    refs = dict(
        zip(
            (e.qsl_idx for e in entries),
            _references(entries, qsl, Boxes),
            strict=True,
        )
    )
    responses = [(e.qsl_idx, e.array("float32")) for e in entries]
    return {"map": detection.mean_average_precision(responses, refs)}


def score_clicks(entries: Sequence[LogEntry], qsl: DatasetQSL, dtype: str) -> Values:
    labels = _references(entries, qsl, np.ndarray)
    preds, truths = [], []
    for entry, label in zip(entries, labels, strict=True):
        pred, truth = clicks.split_pairs(entry.array(dtype), label, entry.qsl_idx)
        preds.append(pred)
        truths.append(truth)
    return clicks.click_metrics(preds, truths)


def score_segmentation(
    entries: Sequence[LogEntry], qsl: DatasetQSL, dtype: str
) -> Values:
    masks = _references(entries, qsl, np.ndarray)
    preds = []
    for entry, mask in zip(entries, masks, strict=True):
        data = entry.array(dtype)
        if data.size != mask.size:
            raise DatasetError(
                f"Segmentation of sample {entry.qsl_idx} has {data.size} voxels, the "
                f"label {mask.size}; pass the right --dtype."
            )
        preds.append(data.reshape(mask.shape).astype(np.uint8))
    return segmentation.mean_dice(preds, masks)


def score_speech(entries: Sequence[LogEntry], qsl: DatasetQSL, dtype: str) -> Values:
    refs = _references(entries, qsl, str)
    hyps = [speech.decode_labels(e.array(dtype).astype(np.int64)) for e in entries]
    return speech.word_error_rate(hyps, refs)


def score_nodes(entries: Sequence[LogEntry], qsl: DatasetQSL, dtype: str) -> Values:
    labels = _references(entries, qsl, int)
    hits = 0
    for entry, label in zip(entries, labels, strict=True):
        pred = entry.array(dtype)
        hits += bool(pred.size) and int(pred[0]) == label
    return {"accuracy": hits / len(entries)}  # a fraction, as the checker's 0.7286


def score_images(
    entries: Sequence[LogEntry], qsl: DatasetQSL, options: images.ImageScoring | None
) -> tuple[Values, dict[str, str]]:
    """CLIP score and FID of SDXL images with the local models in ``options``."""
    opts = options or images.ImageScoring()
    pics = [images.decode_image(e.array("uint8"), e.qsl_idx) for e in entries]
    values: Values = {}
    notes: dict[str, str] = {}
    if opts.clip_model is not None:
        captions = [qsl.sample(e.qsl_idx).prompt or "" for e in entries]
        values["clip_score"] = images.clip_score(pics, captions, opts.clip_model)
    else:
        notes["clip_score"] = "pass --clip-model DIR (a local CLIP directory)"
    if opts.fid_features is not None and opts.fid_stats is not None:
        values["fid"] = images.fid_against_stats(
            pics, opts.fid_stats, opts.fid_features
        )
    else:
        notes["fid"] = "pass --fid-features FILE and --fid-stats FILE.npz"
    return values, notes


def score_vlm(entries: Sequence[LogEntry], qsl: DatasetQSL, dtype: str) -> Values:
    truths = _references(entries, qsl, str)
    texts = [e.data.decode("utf-8", errors="replace") for e in entries]
    return {"f1_hierarchical": vlm.hierarchical_f1(texts, truths)}
