"""Samples, sample sources and the QSL that loads and unloads them by index.

A ``SampleSource`` reads one sample on demand (from a file offset, a row, a seed),
so a ``DatasetQSL`` holds only the loaded set in memory: a dataset larger than
memory still runs, ``performance_sample_count`` samples at a time.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from infermeter.errors import DatasetError, InfermeterError

if TYPE_CHECKING:
    from infermeter.loadgen.interfaces import IndexArray
    from infermeter.workloads.datasets.media_files import MediaFile
    from infermeter.workloads.datasets.tokenizer import Tokenizer

AUDIO_RATE = 16_000  # Hz: LibriSpeech, and what Whisper and RNN-T take


@dataclass(frozen=True, slots=True, eq=False)
class Boxes:
    """Ground-truth boxes of one image, in the COCO-style evaluation's terms.

    ``boxes`` are (N, 4) float32 ``[xmin, ymin, xmax, ymax]`` normalised to
    [0, 1] (the MLPerf detection scripts' coordinates); ``labels`` the (N,)
    category ids; ``width``/``height`` the image size in pixels; ``image_id`` the
    annotation file's id of the image; ``iscrowd`` the annotations' crowd flags
    (None: none is a crowd).
    """

    boxes: npt.NDArray[np.float32]
    labels: npt.NDArray[np.int64]
    width: int
    height: int
    image_id: int
    iscrowd: npt.NDArray[np.bool_] | None = None


# The expected answer: text, acceptable answers, a class label, boxes, or an
# array (a segmentation mask, click labels).
Reference = str | tuple[str, ...] | int | Boxes | npt.NDArray[Any] | None


@dataclass(frozen=True, slots=True, eq=False)
class Sample:
    """One dataset sample: whatever the SUTs and the accuracy scorer need.

    ``prompt`` (text) and/or ``input_ids`` for LLMs, ``messages`` for chat
    (multi-turn) samples, ``output_tokens`` the expected output length,
    ``image`` a CHW float32 tensor for vision (CDHW for volumes), ``audio`` a
    mono float32 waveform at ``AUDIO_RATE``, ``inputs`` any other named tensors
    (lidar points, graph node ids, click features), ``reference`` the expected
    answer (see ``Reference``), ``task`` the sub-dataset of mixed sets (mixtral:
    OpenOrca / GSM8K / MBXP; deepseek-r1: aime / math500 / gpqa ...) that picks
    the metric, ``media`` the encoded files an endpoint is sent (PNG/JPEG
    images, WAV/FLAC audio).
    """

    index: int
    prompt: str | None = None
    input_ids: npt.NDArray[np.int64] | None = None
    messages: tuple[tuple[str, str], ...] | None = None
    output_tokens: int | None = None
    image: npt.NDArray[np.float32] | None = None
    audio: npt.NDArray[np.float32] | None = None
    inputs: Mapping[str, npt.NDArray[Any]] | None = None
    reference: Reference = None
    task: str | None = None
    media: tuple[MediaFile, ...] = ()

    @property
    def input_tokens(self) -> int | None:
        """Number of prompt tokens when token ids are known."""
        return None if self.input_ids is None else int(self.input_ids.shape[0])


class SampleSource(Protocol):
    """Reads samples by index; cheap to keep open, reads lazily."""

    name: str

    def __len__(self) -> int: ...

    def read(self, index: int) -> Sample:
        """Sample ``index`` (0 <= index < len)."""
        ...


class LoadWatcher(Protocol):
    """Told which samples a QSL loads and unloads (an HTTP SUT builds their bodies then)."""

    def samples_loaded(self, indices: IndexArray) -> None: ...

    def samples_unloaded(self, indices: IndexArray) -> None: ...


class DatasetQSL:
    """A QuerySampleLibrary over a SampleSource; thread-safe sample lookup."""

    def __init__(
        self,
        source: SampleSource,
        *,
        performance_sample_count: int | None = None,
        tokenizer: Tokenizer | None = None,
        limit: int | None = None,
    ) -> None:
        total = len(source) if limit is None else min(limit, len(source))
        if total <= 0:
            raise DatasetError(
                f"Dataset {source.name!r} has no samples; check the file."
            )
        self.name = source.name
        self.source = source
        self.tokenizer = tokenizer
        self.total_sample_count = total
        self.performance_sample_count = min(performance_sample_count or total, total)
        self._loaded: dict[int, Sample] = {}
        self._lock = threading.Lock()
        self._watchers: list[LoadWatcher] = []

    def watch(self, watcher: LoadWatcher) -> None:
        """Tell ``watcher`` about every load and unload, after it happens."""
        self._watchers.append(watcher)

    def load_samples(self, indices: IndexArray) -> None:
        """Read these samples into memory (untimed)."""
        for index in np.asarray(indices, dtype=np.int64).tolist():
            if index not in self._loaded:
                sample = self._read(index)
                with self._lock:
                    self._loaded[index] = sample
        for watcher in self._watchers:
            watcher.samples_loaded(indices)

    def unload_samples(self, indices: IndexArray) -> None:
        """Drop these samples from memory."""
        with self._lock:
            for index in np.asarray(indices, dtype=np.int64).tolist():
                self._loaded.pop(index, None)
        for watcher in self._watchers:
            watcher.samples_unloaded(indices)

    @property
    def loaded_count(self) -> int:
        """How many samples are in memory now."""
        return len(self._loaded)

    def sample(self, index: int) -> Sample:
        """Sample ``index``: from memory when loaded, else read (not kept)."""
        found = self._loaded.get(index)
        return found if found is not None else self._read(index)

    def reference(self, index: int) -> Reference:
        """The expected answer of sample ``index`` (for accuracy scoring)."""
        cheap = getattr(self.source, "reference", None)  # skips reading an image
        if cheap is not None and index not in self._loaded:
            self._read_check(index)
            answer: Reference = cheap(index)
            return answer
        return self.sample(index).reference

    def _read(self, index: int) -> Sample:
        self._read_check(index)
        with unreadable_as_dataset_error(f"sample {index} of {self.name!r}"):
            return self.source.read(index)

    def _read_check(self, index: int) -> None:
        if not 0 <= index < self.total_sample_count:
            raise DatasetError(
                f"Sample index {index} is outside dataset {self.name!r} "
                f"({self.total_sample_count} samples)."
            )


class ListSource:
    """A source over samples already parsed into a list (small files)."""

    def __init__(self, name: str, samples: list[Sample]) -> None:
        self.name = name
        self._samples = samples

    def __len__(self) -> int:
        return len(self._samples)

    def read(self, index: int) -> Sample:
        return self._samples[index]


@contextlib.contextmanager
def unreadable_as_dataset_error(what: str) -> Iterator[None]:
    """A file that breaks its reader is the file's fault: one ``DatasetError`` line.

    Readers check the shapes they expect; this catches what no check foresaw
    in a malformed or hostile file (bad bytes, odd types, deep nesting).
    """
    try:
        yield
    except InfermeterError:
        raise
    except (
        UnicodeDecodeError, ValueError, TypeError, KeyError, IndexError,
        AttributeError, RecursionError, OSError, OverflowError,
    ) as exc:  # fmt: skip
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise DatasetError(
            f"Cannot read {what}: {first} ({type(exc).__name__}); check the file, "
            "or name its format with --dataset-format"
        ) from None
