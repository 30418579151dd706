"""Synthetic non-text samples: detection images, volumes, speech, graphs, clicks.

Each source makes sample ``i`` on demand from ``(seed, i)`` with the input's
shape and a reference the accuracy metrics can score, so a fake SUT that
answers from the references scores 100 % and a perturbed one scores less.
The shapes are the benchmarks' input sizes where the registry names one
(``synthetic_shape``); the content is noise, never real data.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from infermeter.workloads.datasets.base import AUDIO_RATE, Boxes, Sample
from infermeter.workloads.datasets.synthetic import corpus_words

DETECTION_CATEGORIES = 80  # synthetic category ids 1..80
GRAPH_CLASSES = 64  # synthetic node classes (not IGBH's)
CRITEO_DENSE, CRITEO_SPARSE = 13, 26  # Criteo: 13 integer, 26 categorical features
SPEECH_WORDS_PER_SECOND = 2.5
VLM_CATEGORIES = ("apparel", "electronics", "home", "garden", "toys", "sports")


def _rng(seed: int, index: int, stream: int = 0) -> np.random.Generator:
    # Stream 0 draws the reference, others the inputs: a reference costs no image.
    return np.random.default_rng([seed, index, stream])


def _text(rng: np.random.Generator, count: int) -> str:
    words = corpus_words()
    start = int(rng.integers(len(words)))
    return " ".join(words[(start + i) % len(words)] for i in range(count))


class _Source:
    """Common size and naming of the synthetic sources."""

    name = "synthetic"

    def __init__(self, count: int, *, seed: int = 0) -> None:
        self._count = count
        self.seed = seed

    def __len__(self) -> int:
        return self._count

    def read(self, index: int) -> Sample:
        raise NotImplementedError


class SyntheticDetection(_Source):
    """CHW float32 noise images with 1-3 ground-truth boxes each."""

    name = "synthetic-detection"

    def __init__(self, count: int, *, shape: tuple[int, ...], seed: int = 0) -> None:
        super().__init__(count, seed=seed)
        self.shape = shape

    def reference(self, index: int) -> Boxes:
        rng = _rng(self.seed, index)
        n = int(rng.integers(1, 4))
        corner = rng.uniform(0.0, 0.6, size=(n, 2))
        size = rng.uniform(0.15, 0.4, size=(n, 2))
        boxes = np.concatenate([corner, corner + size], axis=1).astype(np.float32)
        labels = rng.integers(1, DETECTION_CATEGORIES + 1, size=n).astype(np.int64)
        height, width = self.shape[-2], self.shape[-1]
        return Boxes(boxes, labels, width=width, height=height, image_id=index + 1)

    def read(self, index: int) -> Sample:
        image = _rng(self.seed, index, 1).standard_normal(self.shape, dtype=np.float32)
        return Sample(index=index, image=image, reference=self.reference(index))


class SyntheticSegmentation(_Source):
    """CDHW float32 volumes with a uint8 mask: 0 background, 1 kidney, 2 tumour."""

    name = "synthetic-volumes"

    def __init__(self, count: int, *, shape: tuple[int, ...], seed: int = 0) -> None:
        super().__init__(count, seed=seed)
        self.shape = shape

    def reference(self, index: int) -> np.ndarray:
        rng = _rng(self.seed, index)
        dims = self.shape[-3:]
        mask = np.zeros(dims, dtype=np.uint8)
        lo = [int(rng.integers(d // 8, d // 3)) for d in dims]
        hi = [a + d // 3 for a, d in zip(lo, dims, strict=True)]
        mask[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]] = 1
        mid = [(a + b) // 2 for a, b in zip(lo, hi, strict=True)]
        r = max(1, dims[0] // 16)
        mask[
            mid[0] - r : mid[0] + r, mid[1] - r : mid[1] + r, mid[2] - r : mid[2] + r
        ] = 2
        return mask

    def read(self, index: int) -> Sample:
        mask = self.reference(index)
        noise = _rng(self.seed, index, 1).standard_normal(mask.shape, np.float32)
        image = (noise * 0.1 + mask).astype(np.float32).reshape(self.shape)
        return Sample(index=index, image=image, reference=mask)


class SyntheticSpeech(_Source):
    """16 kHz mono waveforms (a tone per word) with their transcripts."""

    name = "synthetic-speech"

    def __init__(self, count: int, *, max_seconds: float = 30.0, seed: int = 0) -> None:
        super().__init__(count, seed=seed)
        self.max_seconds = max_seconds

    def _words(self, index: int) -> tuple[np.random.Generator, int]:
        rng = _rng(self.seed, index)
        most = max(2, int(self.max_seconds * SPEECH_WORDS_PER_SECOND))
        return rng, int(rng.integers(2, most + 1))

    def reference(self, index: int) -> str:
        rng, count = self._words(index)
        return _text(rng, count)

    def read(self, index: int) -> Sample:
        transcript = self.reference(index)
        words = transcript.split()
        per_word = int(AUDIO_RATE / SPEECH_WORDS_PER_SECOND)
        t = np.arange(per_word, dtype=np.float32) / AUDIO_RATE
        tones = [
            0.1 * np.sin(2 * np.pi * (200 + 10 * (len(w) % 40)) * t) for w in words
        ]
        audio = np.concatenate(tones).astype(np.float32)
        return Sample(index=index, audio=audio, reference=transcript)


class SyntheticNodes(_Source):
    """Graph node ids to classify, each with a synthetic class label."""

    name = "synthetic-graph-nodes"

    def reference(self, index: int) -> int:
        return int(_rng(self.seed, index).integers(GRAPH_CLASSES))

    def read(self, index: int) -> Sample:
        node = np.asarray([index], dtype=np.int64)
        return Sample(
            index=index, inputs={"node_id": node}, reference=self.reference(index)
        )


class SyntheticClicks(_Source):
    """Criteo-shaped user-item pairs (13 dense, 26 sparse features) with click labels."""

    name = "synthetic-clicks"

    def reference(self, index: int) -> np.ndarray:
        rng = _rng(self.seed, index)
        pairs = int(rng.integers(2, 9))
        labels = (rng.random(pairs) < 0.3).astype(np.float32)
        labels[0], labels[1] = 0.0, 1.0  # both classes in every sample: AUC is defined
        return labels

    def read(self, index: int) -> Sample:
        labels = self.reference(index)
        rng = _rng(self.seed, index, 1)
        n = labels.shape[0]
        inputs: dict[str, np.ndarray] = {
            "dense": rng.random((n, CRITEO_DENSE), dtype=np.float32),
            "sparse": rng.integers(0, 1 << 20, size=(n, CRITEO_SPARSE)).astype(
                np.int64
            ),
        }
        return Sample(index=index, inputs=inputs, reference=labels)


class SyntheticVisionPrompts(_Source):
    """An image plus a question; the reference is a category path ("a > b")."""

    name = "synthetic-vision-prompts"

    def __init__(self, count: int, *, shape: tuple[int, ...], seed: int = 0) -> None:
        super().__init__(count, seed=seed)
        self.shape = shape

    def reference(self, index: int) -> str:
        rng = _rng(self.seed, index)
        top = VLM_CATEGORIES[int(rng.integers(len(VLM_CATEGORIES)))]
        return f"{top} > {_text(rng, 1)}"

    def read(self, index: int) -> Sample:
        image = _rng(self.seed, index, 1).random(self.shape, dtype=np.float32)
        prompt = "Which product category does this image show? " + _text(
            _rng(self.seed, index, 2), 12
        )
        return Sample(
            index=index, prompt=prompt, image=image, reference=self.reference(index)
        )


class SyntheticLidar(_Source):
    """Point clouds of (x, y, z, intensity) float32 rows; no reference (not scored)."""

    name = "synthetic-lidar"

    def __init__(self, count: int, *, points: int = 16384, seed: int = 0) -> None:
        super().__init__(count, seed=seed)
        self.points = points

    def read(self, index: int) -> Sample:
        cloud = _rng(self.seed, index).standard_normal((self.points, 4), np.float32)
        return Sample(index=index, inputs={"points": cloud})


class SyntheticSequences(_Source):
    """User histories of item ids for sequential recommendation; not scored."""

    name = "synthetic-sequences"

    def read(self, index: int) -> Sample:
        rng = _rng(self.seed, index)
        length = int(rng.integers(16, 257))
        items = rng.integers(0, 1 << 30, size=length).astype(np.int64)
        return Sample(index=index, inputs={"item_ids": items})


Shape = tuple[int, ...]
Make = Callable[[int, Shape | None, int], _Source]


def _shaped(
    cls: type[SyntheticDetection | SyntheticSegmentation | SyntheticVisionPrompts],
    default: Shape,
) -> Make:
    return lambda count, shape, seed: cls(count, shape=shape or default, seed=seed)


def _plain(cls: type[_Source]) -> Make:
    return lambda count, shape, seed: cls(count, seed=seed)


# dataset format -> (how to make it, default sample count)
_MEDIA: dict[str, tuple[Make, int]] = {
    "openimages": (_shaped(SyntheticDetection, (3, 800, 800)), 64),
    "coco": (_shaped(SyntheticDetection, (3, 640, 640)), 64),
    "kits19": (_shaped(SyntheticSegmentation, (1, 128, 128, 128)), 16),
    "librispeech": (_plain(SyntheticSpeech), 256),
    "igbh": (_plain(SyntheticNodes), 1024),
    "criteo": (_plain(SyntheticClicks), 1024),
    "shopify-catalogue": (_shaped(SyntheticVisionPrompts, (3, 448, 448)), 128),
    "waymo": (_plain(SyntheticLidar), 64),
    "dlrm-v3": (_plain(SyntheticSequences), 1024),
}
MEDIA_FORMATS = tuple(sorted(_MEDIA))


def media_source(
    fmt: str, *, count: int | None, shape: Shape | None, seed: int
) -> _Source | None:
    """The synthetic source for dataset format ``fmt`` (None: not a media format)."""
    found = _MEDIA.get(fmt)
    if found is None:
        return None
    make, default_count = found
    return make(count or default_count, shape, seed)
