"""A sample's image tensors and waveforms as the encoded files an endpoint is sent.

``EncodedMedia`` wraps a source and encodes (PNG, WAV) when its samples are
loaded, outside any timed phase. Above ``base`` (samples, sources) and
``media_files`` (the encoders).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from infermeter.workloads.datasets.base import Sample, SampleSource
from infermeter.workloads.datasets.media_files import (
    AUDIO_RATE,
    MediaFile,
    pcm16,
    pixels_of,
    png_bytes,
    wav_bytes,
)


def encoded_media(sample: Sample) -> tuple[MediaFile, ...]:
    """The files ``sample`` is sent as: its own, else its waveform as WAV, else its image as PNG."""
    if sample.media:
        return sample.media
    stem = f"sample_{sample.index:06d}"
    if sample.audio is not None:
        data = wav_bytes(pcm16(sample.audio), AUDIO_RATE)
        return (MediaFile(data, "audio/wav", stem + ".wav"),)
    if sample.image is not None:
        data = png_bytes(pixels_of(sample.image), level=1)
        return (MediaFile(data, "image/png", stem + ".png"),)
    return ()


class EncodedMedia:
    """A source whose samples also carry their tensors encoded as files (PNG, WAV).

    Encoding happens in ``read``, which a QSL calls when it loads samples,
    outside any timed phase.
    """

    def __init__(self, source: SampleSource) -> None:
        self.source = source
        self.name = source.name

    def __len__(self) -> int:
        return len(self.source)

    def read(self, index: int) -> Sample:
        sample = self.source.read(index)
        return replace(sample, media=encoded_media(sample))

    def reference(self, index: int) -> Any:
        """The wrapped source's cheap reference, when it has one."""
        cheap = getattr(self.source, "reference", None)
        return cheap(index) if cheap is not None else self.read(index).reference
