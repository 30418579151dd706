"""Readers of multimodal datasets the user gives (sent as files), and a benchmark's modality.

* ``image-folder``: a folder of PNG/JPEG/WebP/GIF images; ``<stem>.txt`` beside an
  image is its question, else a generic one.
* ``vlm-jsonl`` (MMMU-style): one JSON object per line with ``question``
  (or ``prompt`` / ``text``), optional ``options`` and ``answer``, and images in
  ``image``, ``images`` or ``image_1`` .. ``image_7`` (paths relative to the file,
  or ``data:image/...;base64,`` URLs).
* ``librispeech``: a LibriSpeech folder (``*.trans.txt`` beside ``.flac``/``.wav``),
  the MLPerf whisper manifest JSON (``[{"transcript", "files": [{"fname"}],
  "original_duration"}]``, clips over 30 s left out as the reference does) or a
  JSONL manifest (``{"audio_filepath", "text"}``). Each clip is sent as its file;
  a WAV's waveform is also decoded (``media_formats.read_wav``, 16 kHz mono).
* ``coco-captions``: MLPerf's SDXL ``captions.tsv`` (a ``caption`` column).

Prompt lists (``text-lines``) are ``media_formats.text_lines``. Media bytes are
read when a sample is loaded, never all at once.
"""

from __future__ import annotations

import ast
import base64
import binascii
import csv
import json
from pathlib import Path
from typing import Any

from infermeter.errors import DatasetError
from infermeter.workloads.benchmark import Benchmark
from infermeter.workloads.datasets.base import ListSource, Sample
from infermeter.workloads.datasets.media_files import MediaFile, read_media, sniff_mime
from infermeter.workloads.datasets.media_formats import read_wav

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif")
AUDIO_SUFFIXES = (".flac", ".wav", ".mp3", ".ogg")
DEFAULT_QUESTION = "Describe this image in detail."
MAX_CLIP_SECONDS = 30.0  # MLPerf's whisper QSL drops longer clips (MAX_DURATION)
IMAGE_KEYS = ("image", "images", *(f"image_{i}" for i in range(1, 8)))

# What each dataset format feeds: the request a benchmark on it sends.
MODALITY_OF_FORMAT = {
    "image-folder": "vision-chat",
    "vlm-jsonl": "vision-chat",
    "shopify-catalogue": "vision-chat",
    "librispeech": "speech",
    "coco-captions": "text-to-image",
}
_TASK_WORDS = (
    ("speech", "speech"),
    ("text to image", "text-to-image"),
    ("text-to-image", "text-to-image"),
    ("video", "text-to-video"),
    ("vision", "vision-chat"),
    ("multimodal", "vision-chat"),
)


def modality(bench: Benchmark) -> str | None:
    """``vision-chat``, ``speech``, ``text-to-image``, ``text-to-video`` or None (text)."""
    found = MODALITY_OF_FORMAT.get(bench.dataset_format)
    if found is not None:
        return found
    task = bench.task.lower()
    return next((kind for word, kind in _TASK_WORDS if word in task), None)


class ImageFolder:
    """Every image of a folder, sorted by name, with its question."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self._files = sorted(
            p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES
        )
        if not self._files:
            raise DatasetError(
                f"Folder {str(path)!r} has no images ({', '.join(IMAGE_SUFFIXES)})."
            )

    def __len__(self) -> int:
        return len(self._files)

    def read(self, index: int) -> Sample:
        image = self._files[index]
        question = image.with_suffix(".txt")
        text = (
            question.read_text(encoding="utf-8").strip()
            if question.exists()
            else DEFAULT_QUESTION
        )
        return Sample(
            index=index, prompt=text, media=(read_media(image, kind="image"),)
        )


class VisionJsonl:
    """MMMU-style JSONL: a question, its images and (optionally) its answer per line."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self._base = path.parent
        self._rows: list[tuple[str, tuple[str, ...], str | None, int | None]] = []
        for line_no, line in enumerate(_lines(path), 1):
            if line.strip():
                self._rows.append(_vision_row(path, line_no, line))
        if not self._rows:
            raise DatasetError(f"{str(path)!r} has no samples (one JSON per line).")

    def __len__(self) -> int:
        return len(self._rows)

    def read(self, index: int) -> Sample:
        text, images, answer, out = self._rows[index]
        media = tuple(self._image(ref, index, i) for i, ref in enumerate(images))
        return Sample(
            index=index, prompt=text, reference=answer, output_tokens=out, media=media
        )

    def reference(self, index: int) -> str | None:
        """The answer without reading the images."""
        return self._rows[index][2]

    def _image(self, ref: str, index: int, n: int) -> MediaFile:
        if ref.startswith("data:"):
            return _data_url_image(ref, f"sample_{index:06d}_{n}")
        return read_media(self._base / ref, kind="image")


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise DatasetError(f"{str(path)!r} is not UTF-8 text.") from None


def _vision_row(
    path: Path, line_no: int, line: str
) -> tuple[str, tuple[str, ...], str | None, int | None]:
    where = f"{path}:{line_no}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: not JSON ({exc.msg}).") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object.")
    text = next((row[k] for k in ("question", "prompt", "text") if k in row), None)
    if not isinstance(text, str):
        raise DatasetError(f'{where}: no "question" (or "prompt" / "text") string.')
    images = _image_refs(row)
    if not images:
        raise DatasetError(
            f'{where}: no image; give "image", "images" or "image_1" (a path or data URL).'
        )
    answer = row.get("answer")
    out = row.get("max_tokens") or row.get("output_tokens")
    return (
        text + _options_text(row.get("options")),
        images,
        None if answer is None else str(answer),
        int(out) if isinstance(out, int | float) else None,
    )


def _image_refs(row: dict[str, Any]) -> tuple[str, ...]:
    refs: list[str] = []
    for key in IMAGE_KEYS:
        value = row.get(key)
        if isinstance(value, str) and value:
            refs.append(value)
        elif isinstance(value, list):
            refs += [v for v in value if isinstance(v, str) and v]
    return tuple(refs)


def _options_text(options: Any) -> str:
    """MMMU lists choices as a list or as the text of a Python list."""
    if isinstance(options, str):
        try:
            options = ast.literal_eval(options)
        except (ValueError, SyntaxError):
            return f"\n{options}"
    if not isinstance(options, list) or not options:
        return ""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return "".join(f"\n{letters[i]}. {o}" for i, o in enumerate(options[:26]))


def _data_url_image(url: str, stem: str) -> MediaFile:
    head, _, payload = url.partition(",")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise DatasetError(f"Image data URL {head!r}... is not valid base64.") from None
    mime = sniff_mime(data)
    if mime is None or not mime.startswith("image/"):
        raise DatasetError(f"Image data URL {head!r}... does not hold an image.")
    return MediaFile(data, mime, stem + "." + mime.partition("/")[2])


class AudioList:
    """Audio files with their transcripts (LibriSpeech folder or a manifest)."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        if path.is_dir():
            rows = _librispeech_folder(path)
        elif path.suffix.lower() == ".jsonl":
            rows = _jsonl_manifest(path)
        else:
            rows = _mlperf_manifest(path)
        if not rows:
            raise DatasetError(f"{str(path)!r} lists no audio clips.")
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def read(self, index: int) -> Sample:
        audio, transcript = self._rows[index]
        wave = read_wav(audio) if audio.suffix.lower() == ".wav" else None
        return Sample(
            index=index,
            audio=wave,
            reference=transcript,
            media=(read_media(audio, kind="audio"),),
        )

    def reference(self, index: int) -> str:
        """The transcript without reading the audio."""
        return self._rows[index][1]


def _librispeech_folder(root: Path) -> list[tuple[Path, str]]:
    rows: list[tuple[Path, str]] = []
    for listing in sorted(root.rglob("*.trans.txt")):
        for line in _lines(listing):
            utt, _, text = line.strip().partition(" ")
            if not utt:
                continue
            audio = next(
                (
                    listing.parent / f"{utt}{s}"
                    for s in AUDIO_SUFFIXES
                    if (listing.parent / f"{utt}{s}").exists()
                ),
                None,
            )
            if audio is None:
                raise DatasetError(
                    f"{listing}: no audio file for {utt!r} "
                    f"({'/'.join(AUDIO_SUFFIXES)}) in {str(listing.parent)!r}."
                )
            rows.append((audio, text))
    if not rows:
        raise DatasetError(
            f"Folder {str(root)!r} has no LibriSpeech *.trans.txt listings."
        )
    return rows


def _resolve(base: Path, name: str) -> Path:
    """Relative to the manifest first, then as given (absolute or from here)."""
    beside = base / name
    return beside if beside.exists() else Path(name)


def _mlperf_manifest(path: Path) -> list[tuple[Path, str]]:
    from infermeter.workloads.datasets.formats import read_json

    data = read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{str(path)!r} is not a JSON list of clips.")
    rows = []
    for i, clip in enumerate(data):
        try:
            fname = str(clip["files"][0]["fname"])
            text = str(clip["transcript"])
        except (KeyError, IndexError, TypeError):
            raise DatasetError(
                f'{str(path)!r} entry {i}: expected {{"transcript", "files": [{{"fname"}}]}}.'
            ) from None
        if float(clip.get("original_duration", 0.0)) > MAX_CLIP_SECONDS:
            continue
        rows.append((_resolve(path.parent, fname), text))
    return rows


def _jsonl_manifest(path: Path) -> list[tuple[Path, str]]:
    rows = []
    for line_no, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            audio = str(row["audio_filepath"])
            text = str(row.get("text", row.get("transcript", "")))
        except (json.JSONDecodeError, KeyError, TypeError):
            raise DatasetError(
                f'{path}:{line_no}: expected {{"audio_filepath", "text"}}.'
            ) from None
        rows.append((_resolve(path.parent, audio), text))
    return rows


def coco_captions(path: Path) -> ListSource:
    """MLPerf SDXL captions TSV: the ``caption`` column is the prompt and the reference."""
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if reader.fieldnames is None or "caption" not in reader.fieldnames:
            raise DatasetError(
                f"{str(path)!r} has no 'caption' column (expected MLPerf's captions.tsv)."
            )
        captions = [str(row["caption"]) for row in reader]
    samples = [Sample(index=i, prompt=c, reference=c) for i, c in enumerate(captions)]
    return ListSource(path.name, samples)


def sniff_media(path: Path) -> str | None:
    """The media format of a folder or file from its layout and first line; None: not media."""
    if path.is_dir():
        if any(p.suffix.lower() in IMAGE_SUFFIXES for p in path.iterdir()):
            return "image-folder"
        return "librispeech" if next(path.rglob("*.trans.txt"), None) else None
    suffix = path.suffix.lower()
    if suffix == ".tsv":
        return "coco-captions"
    if suffix not in (".jsonl", ".json", ".txt"):
        return None
    first = next((line for line in _head(path) if line.strip()), "")
    if suffix == ".jsonl":
        if '"audio_filepath"' in first:
            return "librispeech"
        return "vlm-jsonl" if any(f'"{k}"' in first for k in IMAGE_KEYS) else None
    if suffix == ".json":
        return "librispeech" if '"transcript"' in "".join(_head(path)) else None
    words = first.split()
    label = len(words) == 2 and words[1].lstrip("-").isdigit()
    return None if label else "text-lines"  # "<file> <label>" lines are ImageNet's


def _head(path: Path, lines: int = 20) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        return [fh.readline() for _ in range(lines)]
