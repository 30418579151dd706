"""Synthetic samples have each benchmark's input shape and a scoreable reference."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.workloads import get_benchmark
from infermeter.workloads.datasets import DatasetOptions, build_qsl
from infermeter.workloads.datasets.base import AUDIO_RATE, Boxes


def _sample(name: str, index: int = 1, seed: int = 0):
    qsl = build_qsl(get_benchmark(name), options=DatasetOptions(samples=4, seed=seed))
    return qsl, qsl.sample(index)


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("resnet50", (3, 224, 224)),
        ("retinanet", (3, 800, 800)),
        ("ssd-mobilenet", (3, 300, 300)),
        ("yolo", (3, 640, 640)),
        ("3d-unet", (1, 128, 128, 128)),
        ("qwen3-vl-235b-a22b", (3, 448, 448)),
    ],
)
def test_image_shapes(name: str, shape: tuple[int, ...]) -> None:
    _, sample = _sample(name)
    assert sample.image is not None
    assert sample.image.shape == shape
    assert sample.image.dtype == np.float32


@pytest.mark.parametrize("name", ["retinanet", "yolo", "ssd-mobilenet"])
def test_detection_references_are_boxes(name: str) -> None:
    qsl, sample = _sample(name)
    ref = sample.reference
    assert isinstance(ref, Boxes)
    assert ref.boxes.shape == (ref.labels.shape[0], 4)
    assert ((ref.boxes >= 0) & (ref.boxes <= 1)).all()
    assert (ref.boxes[:, 2:] > ref.boxes[:, :2]).all()
    assert (ref.width, ref.height) == sample.image.shape[:0:-1]
    # The cheap path (no image made) gives the same reference.
    cheap = qsl.reference(1)
    assert isinstance(cheap, Boxes)
    assert np.array_equal(cheap.boxes, ref.boxes)


def test_volumes_carry_kidney_and_tumour_masks() -> None:
    _, sample = _sample("3d-unet")
    mask = sample.reference
    assert isinstance(mask, np.ndarray)
    assert mask.dtype == np.uint8
    assert set(np.unique(mask).tolist()) == {0, 1, 2}


@pytest.mark.parametrize("name", ["whisper", "rnnt"])
def test_speech_is_16khz_audio_with_a_transcript(name: str) -> None:
    _, sample = _sample(name)
    assert sample.audio is not None and sample.audio.dtype == np.float32
    words = str(sample.reference).split()
    assert len(words) >= 2
    assert sample.audio.shape[0] == len(words) * AUDIO_RATE * 2 // 5  # 2.5 words/s
    assert sample.audio.shape[0] <= 30 * AUDIO_RATE


def test_clicks_rgat_lidar_sequences() -> None:
    _, clicks = _sample("dlrm-v2")
    labels = clicks.reference
    assert isinstance(labels, np.ndarray)
    assert clicks.inputs["dense"].shape == (labels.shape[0], 13)
    assert clicks.inputs["sparse"].shape == (labels.shape[0], 26)
    assert {0.0, 1.0} <= set(labels.tolist())
    _, node = _sample("rgat")
    assert node.inputs["node_id"].tolist() == [1]
    assert isinstance(node.reference, int)
    _, cloud = _sample("pointpainting")
    assert cloud.inputs["points"].shape[1] == 4
    _, seq = _sample("dlrm-v3")
    assert seq.inputs["item_ids"].dtype == np.int64


def test_same_seed_same_samples_other_seed_other() -> None:
    _, a = _sample("whisper", seed=3)
    _, b = _sample("whisper", seed=3)
    _, c = _sample("whisper", seed=4)
    assert a.reference == b.reference
    assert np.array_equal(a.audio, b.audio)
    assert a.reference != c.reference
