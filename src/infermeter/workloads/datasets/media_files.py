"""Media files the project writes and recognises itself: PNG and WAV encoders, type sniffing.

No imaging or audio library: PNG is zlib + struct (the PNG specification, RFC 2083),
WAV the stdlib ``wave`` module, so synthetic inputs cost no dependency and are the
same bytes on every machine. Sniffing reads magic numbers, never decodes.
"""

from __future__ import annotations

import io
import struct
import wave
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import DatasetError

AUDIO_RATE = 16_000

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# (magic at offset 0, extra magic at offset 8 or b"", MIME type)
_SIGNATURES: tuple[tuple[bytes, bytes, str], ...] = (
    (PNG_MAGIC, b"", "image/png"),
    (b"\xff\xd8\xff", b"", "image/jpeg"),
    (b"GIF87a", b"", "image/gif"),
    (b"GIF89a", b"", "image/gif"),
    (b"RIFF", b"WEBP", "image/webp"),
    (b"RIFF", b"WAVE", "audio/wav"),
    (b"fLaC", b"", "audio/flac"),
    (b"OggS", b"", "audio/ogg"),
    (b"ID3", b"", "audio/mpeg"),
    (b"\xff\xfb", b"", "audio/mpeg"),
    (b"\xff\xf3", b"", "audio/mpeg"),
)
EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "audio/wav": ".wav",
    "audio/flac": ".flac",
    "audio/ogg": ".ogg",
    "audio/mpeg": ".mp3",
    "video/mp4": ".mp4",
}


@dataclass(frozen=True, slots=True, eq=False)
class MediaFile:
    """One input file sent with a request: its bytes, MIME type and file name."""

    data: bytes
    mime: str
    name: str

    @property
    def kind(self) -> str:
        """``image``, ``audio`` or ``video`` (the MIME type's first half)."""
        return self.mime.partition("/")[0]


def sniff_mime(data: bytes) -> str | None:
    """The MIME type the first bytes say (None: not a format infermeter knows)."""
    for magic, extra, mime in _SIGNATURES:
        if data.startswith(magic) and (not extra or data[8:12] == extra):
            return mime
    if data[4:8] == b"ftyp":  # ISO base media (MP4)
        return "video/mp4"
    return None


def read_media(path: Path, *, kind: str) -> MediaFile:
    """Read a user's image or audio file; a ``DatasetError`` names a wrong one."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(
            f"Cannot read {kind} file {str(path)!r}: {exc.strerror}; check the path."
        ) from None
    mime = sniff_mime(data)
    if mime is None or not mime.startswith(kind):
        found = mime or "an unknown format"
        raise DatasetError(
            f"{str(path)!r} is {found}, not an {kind} infermeter knows "
            f"({', '.join(m for m in EXTENSIONS if m.startswith(kind))})."
        )
    return MediaFile(data, mime, path.name)


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bytes(pixels: npt.NDArray[np.uint8], *, level: int = 6) -> bytes:
    """An 8-bit RGB PNG of ``pixels`` (height x width x 3), filter 0 on every row.

    ``level`` is zlib's: 1 is several times faster on noise, which no level shrinks.
    """
    if pixels.ndim != 3 or pixels.shape[2] != 3 or pixels.dtype != np.uint8:
        raise ValueError("png_bytes needs a (height, width, 3) uint8 array")
    height, width = int(pixels.shape[0]), int(pixels.shape[1])
    rows = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # column 0: filter type
    rows[:, 1:] = pixels.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        PNG_MAGIC
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), level))
        + _chunk(b"IEND", b"")
    )


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG header or a JPEG frame header; None otherwise."""
    if data.startswith(PNG_MAGIC) and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    return None


def wav_bytes(samples: npt.NDArray[np.int16], rate: int = 16_000) -> bytes:
    """A mono 16-bit PCM WAV file of ``samples`` at ``rate`` Hz."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(samples.astype("<i2").tobytes())
    return out.getvalue()


def wav_info(data: bytes) -> tuple[int, int, float] | None:
    """(channels, sample rate, seconds) of a PCM WAV file; None when it is not one."""
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            rate = wav.getframerate()
            return wav.getnchannels(), rate, wav.getnframes() / rate
    except (wave.Error, EOFError, ZeroDivisionError):
        return None


def pixels_of(image: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    """A CHW (the samples' layout), HWC or HW tensor as (height, width, 3) uint8 pixels.

    Floats in [0, 1] scale by 255; other floats (normalised tensors) are
    stretched from their own minimum and maximum.
    """
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[0] in (1, 3):
        array = np.moveaxis(array, 0, -1)
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3 or array.shape[2] not in (1, 3):
        raise DatasetError(
            f"An image tensor of shape {image.shape} cannot be sent as a picture; "
            "give CHW, HWC or HW with 1 or 3 channels."
        )
    if array.dtype != np.uint8:
        low, high = float(array.min()), float(array.max())
        if low >= 0.0 and high <= 1.0:
            array = array * 255.0
        elif high > low:
            array = (array - low) * (255.0 / (high - low))
        array = np.clip(np.rint(array), 0, 255).astype(np.uint8)
    return np.repeat(array, 3, axis=2) if array.shape[2] == 1 else array


def pcm16(audio: npt.NDArray[Any]) -> npt.NDArray[np.int16]:
    """A float waveform in [-1, 1] as 16-bit PCM (clipped)."""
    return (np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0) * 32767).astype(
        np.int16
    )
