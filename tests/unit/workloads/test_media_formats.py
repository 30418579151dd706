"""Reference formats of the newer benchmarks, read from small files written here."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest

from infermeter.errors import DatasetError
from infermeter.workloads import get_benchmark
from infermeter.workloads.datasets import build_qsl
from infermeter.workloads.datasets.base import AUDIO_RATE, Boxes


def _coco(path: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "images": [
                    {"id": 7, "width": 200, "height": 100, "file_name": "a.jpg"},
                    {"id": 9, "width": 50, "height": 50, "file_name": "b.jpg"},
                ],
                "annotations": [
                    {
                        "id": 1,
                        "image_id": 7,
                        "category_id": 3,
                        "bbox": [20, 10, 100, 50],
                    },
                    {
                        "id": 2,
                        "image_id": 7,
                        "category_id": 5,
                        "bbox": [0, 0, 10, 10],
                        "iscrowd": 1,
                    },
                ],
                "categories": [{"id": 3}, {"id": 5}],
            }
        )
    )
    return path


def test_coco_annotations_give_normalised_boxes(tmp_path) -> None:
    qsl = build_qsl(get_benchmark("yolo"), _coco(tmp_path / "instances_val2017.json"))
    assert qsl.total_sample_count == 2
    ref = qsl.reference(0)
    assert isinstance(ref, Boxes)
    assert ref.image_id == 7 and (ref.width, ref.height) == (200, 100)
    np.testing.assert_allclose(ref.boxes[0], [0.1, 0.1, 0.6, 0.6])
    assert ref.labels.tolist() == [3, 5]
    assert ref.iscrowd.tolist() == [False, True]
    assert qsl.reference(1).boxes.shape == (0, 4)  # an image without boxes


def test_coco_boxes_score_100_against_themselves(tmp_path) -> None:
    pytest.importorskip("pycocotools")
    from infermeter.workloads.accuracy.detection import (
        encode_detections,
        mean_average_precision,
    )

    qsl = build_qsl(get_benchmark("retinanet"), _coco(tmp_path / "openimages.json"))
    refs = {i: qsl.reference(i) for i in range(2)}
    responses = [
        (i, np.frombuffer(encode_detections(i, refs[i]), np.float32)) for i in refs
    ]
    assert mean_average_precision(responses, refs) == pytest.approx(100.0)


def _wav(path: Path, seconds: float, rate: int = AUDIO_RATE) -> None:
    t = np.arange(int(seconds * rate)) / rate
    pcm = (np.sin(2 * np.pi * 440 * t) * 16000).astype("<i2")
    with wave.open(str(path), "wb") as fh:
        fh.setnchannels(1)
        fh.setsampwidth(2)
        fh.setframerate(rate)
        fh.writeframes(pcm.tobytes())


def test_speech_manifest_with_wav(tmp_path) -> None:
    (tmp_path / "wav").mkdir()
    _wav(tmp_path / "wav" / "a.wav", 0.5)
    manifest = tmp_path / "dev-all-repack.json"
    manifest.write_text(
        json.dumps([{"transcript": "hello world", "files": [{"fname": "wav/a.wav"}]}])
    )
    qsl = build_qsl(get_benchmark("whisper"), manifest)
    sample = qsl.sample(0)
    assert sample.reference == "hello world"
    assert sample.audio.shape == (AUDIO_RATE // 2,)
    assert float(np.abs(sample.audio).max()) == pytest.approx(16000 / 32768, rel=1e-3)


def test_speech_manifest_refuses_other_rates(tmp_path) -> None:
    _wav(tmp_path / "a.wav", 0.1, rate=8000)
    manifest = tmp_path / "m.json"
    manifest.write_text(
        json.dumps([{"transcript": "x", "files": [{"fname": "a.wav"}]}])
    )
    qsl = build_qsl(get_benchmark("whisper"), manifest)
    with pytest.raises(DatasetError, match="8000 Hz"):
        qsl.sample(0)


def test_text_lines_for_wan(tmp_path) -> None:
    path = tmp_path / "vbench_prompts.txt"
    path.write_text("a cat surfing\n\na dog skiing\n")
    qsl = build_qsl(get_benchmark("wan-2.2-t2v-a14b"), path)
    assert [qsl.sample(i).prompt for i in range(2)] == ["a cat surfing", "a dog skiing"]
