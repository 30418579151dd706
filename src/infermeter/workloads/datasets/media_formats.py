"""Readers of the reference formats of the newer benchmarks, from files the user gives.

- ``coco`` / ``openimages``: a COCO-style annotation JSON (``instances_val2017.json``,
  ``openimages-mlperf.json``); sample i is the i-th entry of ``images``, as the
  MLPerf detection scripts index it, with its boxes as the reference. Images are
  not decoded (the references are what accuracy needs; performance runs on real
  images need a SUT that reads its own preprocessed files).
- ``librispeech`` is read by ``media_readers.AudioList`` (manifests and
  LibriSpeech folders; ``read_wav`` here gives the waveform of WAV files).
- ``text-lines``: one prompt per line (the Wan 2.2 ``vbench_prompts.txt``).
"""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import DatasetError
from infermeter.workloads.datasets.base import AUDIO_RATE, Boxes, ListSource, Sample
from infermeter.workloads.datasets.formats import read_json


def _bad(path: Path, what: str) -> DatasetError:
    return DatasetError(f"{str(path)!r} is not {what}; check --dataset-format.")


class CocoDetection:
    """Samples = the annotation file's images in order; references = their boxes."""

    def __init__(self, path: Path) -> None:
        data = read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("images"), list):
            raise _bad(path, "a COCO annotation file (an 'images' list)")
        self.name = path.name
        self._images: list[dict[str, Any]] = data["images"]
        self._boxes: dict[int, list[dict[str, Any]]] = {}
        for ann in data.get("annotations", []):
            self._boxes.setdefault(int(ann["image_id"]), []).append(ann)

    def __len__(self) -> int:
        return len(self._images)

    def reference(self, index: int) -> Boxes:
        image = self._images[index]
        width, height = int(image["width"]), int(image["height"])
        anns = self._boxes.get(int(image["id"]), [])
        rows = [
            [x / width, y / height, (x + w) / width, (y + h) / height]
            for x, y, w, h in (a["bbox"] for a in anns)
        ]
        return Boxes(
            np.asarray(rows, np.float32).reshape(-1, 4),
            np.asarray([a["category_id"] for a in anns], np.int64),
            width=width,
            height=height,
            image_id=int(image["id"]),
            iscrowd=np.asarray([bool(a.get("iscrowd", 0)) for a in anns], np.bool_),
        )

    def read(self, index: int) -> Sample:
        return Sample(index=index, reference=self.reference(index))


def read_wav(path: Path) -> np.ndarray:
    """Mono 16-bit PCM at 16 kHz as float32 in [-1, 1]."""
    try:
        with wave.open(str(path), "rb") as fh:
            if (fh.getsampwidth(), fh.getnchannels()) != (2, 1):
                raise DatasetError(f"{str(path)!r} is not mono 16-bit PCM.")
            if fh.getframerate() != AUDIO_RATE:
                raise DatasetError(
                    f"{str(path)!r} is {fh.getframerate()} Hz; the benchmark takes "
                    f"{AUDIO_RATE} Hz."
                )
            pcm = np.frombuffer(fh.readframes(fh.getnframes()), dtype="<i2")
    except (OSError, wave.Error) as exc:
        raise DatasetError(f"Cannot read audio {str(path)!r} ({exc}).") from None
    return (pcm.astype(np.float32) / 32768.0).astype(np.float32)


def text_lines(path: Path) -> ListSource:
    """One prompt per non-empty line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"Cannot read prompts {str(path)!r} ({exc}).") from None
    prompts = [line.strip() for line in lines if line.strip()]
    return ListSource(
        path.name, [Sample(index=i, prompt=p) for i, p in enumerate(prompts)]
    )
