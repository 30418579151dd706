"""Synthetic multimodal samples: PNG pictures with a question, WAV audio, captions.

Made on demand from ``(seed, index)`` like the text sources, written by the
project (``media_files``), never downloaded. They exercise an endpoint's
performance; their answers mean nothing (the audio holds no speech, the
pictures no objects), so accuracy needs the real dataset files.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from infermeter.workloads.datasets.base import Sample
from infermeter.workloads.datasets.lengths import LengthSpec
from infermeter.workloads.datasets.media_files import MediaFile, png_bytes, wav_bytes
from infermeter.workloads.datasets.synthetic import corpus_words

IMAGE_SIDE = 512
AUDIO_RATE = 16_000
# MLPerf's whisper set repacks LibriSpeech utterances into clips of up to 30 s.
AUDIO_SECONDS = (5.0, 30.0)


def _words(rng: np.random.Generator, count: int) -> str:
    words = corpus_words()
    start = int(rng.integers(len(words)))
    return " ".join(words[(start + i) % len(words)] for i in range(count))


def synthetic_picture(
    rng: np.random.Generator, width: int, height: int
) -> npt.NDArray[np.uint8]:
    """A colour gradient with a few filled rectangles: compresses like a simple photo."""
    y = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :]
    a, b = rng.uniform(0, 255, size=(2, 3)).astype(np.float32)
    image = np.empty((height, width, 3), dtype=np.float32)
    for c in range(3):
        image[:, :, c] = a[c] * (1 - x) * (1 - y) + b[c] * x * y + 40.0 * y
    for _ in range(int(rng.integers(3, 8))):
        x0, x1 = sorted(rng.integers(0, width, size=2).tolist())
        y0, y1 = sorted(rng.integers(0, height, size=2).tolist())
        image[y0 : y1 + 1, x0 : x1 + 1] = rng.uniform(0, 255, size=3)
    return np.clip(image, 0, 255).astype(np.uint8)


def synthetic_sound(
    rng: np.random.Generator, seconds: float, rate: int = AUDIO_RATE
) -> npt.NDArray[np.int16]:
    """Voiced-like audio: harmonics of a 100-250 Hz pitch, pulsed at syllable rate, plus noise."""
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    pitch = float(rng.uniform(100.0, 250.0))
    wave = sum(
        np.sin(2 * np.pi * pitch * k * t + float(rng.uniform(0, 6.28))) / k
        for k in (1, 2, 3)
    )
    syllables = 0.5 + 0.5 * np.sin(2 * np.pi * float(rng.uniform(3.0, 5.0)) * t)
    noise = rng.normal(0.0, 0.05, size=t.shape).astype(np.float32)
    signal = 0.3 * wave * syllables + noise
    return (np.clip(signal, -1.0, 1.0) * 32767).astype(np.int16)


class SyntheticVisionChat:
    """A question about one synthetic PNG per sample (vision-language chat)."""

    def __init__(
        self,
        count: int,
        *,
        input_len: LengthSpec,
        output_len: LengthSpec,
        seed: int = 0,
        side: int = IMAGE_SIDE,
    ) -> None:
        self.name = "synthetic-vision-chat"
        self._count = count
        self.input_len = input_len
        self.output_len = output_len
        self.seed = seed
        self.side = side

    def __len__(self) -> int:
        return self._count

    def read(self, index: int) -> Sample:
        rng = np.random.default_rng([self.seed, index])
        n_in, n_out = self.input_len.draw(rng), self.output_len.draw(rng)
        picture = png_bytes(synthetic_picture(rng, self.side, self.side))
        return Sample(
            index=index,
            prompt=f"Describe the picture. {_words(rng, max(1, n_in))}",
            output_tokens=n_out,
            media=(MediaFile(picture, "image/png", f"sample_{index:06d}.png"),),
        )


class SyntheticSpeech:
    """One synthetic 16 kHz mono WAV clip per sample (speech recognition load)."""

    def __init__(
        self,
        count: int,
        *,
        seed: int = 0,
        seconds: tuple[float, float] = AUDIO_SECONDS,
    ) -> None:
        self.name = "synthetic-speech"
        self._count = count
        self.seed = seed
        self.seconds = seconds

    def __len__(self) -> int:
        return self._count

    def read(self, index: int) -> Sample:
        rng = np.random.default_rng([self.seed, index])
        seconds = float(rng.uniform(*self.seconds))
        audio = wav_bytes(synthetic_sound(rng, seconds))
        return Sample(
            index=index,
            media=(MediaFile(audio, "audio/wav", f"sample_{index:06d}.wav"),),
        )


class SyntheticCaptions:
    """Short scene descriptions as prompts (text-to-image and text-to-video)."""

    def __init__(self, count: int, *, seed: int = 0, words: int = 12) -> None:
        self.name = "synthetic-captions"
        self._count = count
        self.seed = seed
        self.words = words

    def __len__(self) -> int:
        return self._count

    def read(self, index: int) -> Sample:
        rng = np.random.default_rng([self.seed, index])
        caption = f"A picture of {_words(rng, self.words)}."
        return Sample(index=index, prompt=caption, reference=caption)
