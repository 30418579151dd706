"""Multimodal inputs: PNG/WAV written by the project, readers of user files, synthetic sets."""

from __future__ import annotations

import base64
import json
import struct
import wave
import zlib
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest

from infermeter.errors import DatasetError
from infermeter.workloads import get_benchmark
from infermeter.workloads.benchmark import benchmark_from_dict
from infermeter.workloads.datasets import DatasetOptions, build_qsl
from infermeter.workloads.datasets.base import Sample
from infermeter.workloads.datasets.encoded_media import encoded_media
from infermeter.workloads.datasets.factory import sniff_format
from infermeter.workloads.datasets.media_files import (
    image_size,
    pixels_of,
    png_bytes,
    sniff_mime,
    wav_bytes,
    wav_info,
)
from infermeter.workloads.datasets.media_readers import modality, sniff_media


def _bench(fmt: str, task: str = "custom") -> object:
    raw = {
        "name": f"t-{fmt}",
        "conf_models": ["whisper"],
        "task": task,
        "dataset": "test",
        "dataset_format": fmt,
        "scenarios": ["Offline"],
        "performance_sample_count": 4,
    }
    return benchmark_from_dict(raw, origin="test", custom=True)


def _png(width: int = 6, height: int = 4, value: int = 7) -> bytes:
    return png_bytes(np.full((height, width, 3), value, dtype=np.uint8))


def _wav(seconds: float = 1.0) -> bytes:
    return wav_bytes(np.zeros(int(16_000 * seconds), dtype=np.int16))


def test_png_decodes_back_to_its_pixels() -> None:
    pixels = np.random.default_rng(1).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    data = png_bytes(pixels)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    assert struct.unpack(">II", data[16:24]) == (7, 5)
    # IDAT holds one filter byte (0) and the raw RGB row per scanline
    start = data.index(b"IDAT") + 4
    size = struct.unpack(">I", data[start - 8 : start - 4])[0]
    crc = struct.unpack(">I", data[start + size : start + size + 4])[0]
    assert crc == zlib.crc32(data[start - 4 : start + size]) & 0xFFFFFFFF
    rows = np.frombuffer(zlib.decompress(data[start : start + size]), np.uint8)
    rows = rows.reshape(5, 1 + 7 * 3)
    assert (rows[:, 0] == 0).all()
    assert (rows[:, 1:].reshape(5, 7, 3) == pixels).all()
    assert image_size(data) == (7, 5)
    assert sniff_mime(data) == "image/png"


def test_jpeg_size_from_its_frame_header() -> None:
    # SOI, an APP0 segment of 16 bytes, then SOF0 with height 480 and width 640
    jpeg = b"\xff\xd8" + b"\xff\xe0\x00\x10" + bytes(14)
    jpeg += b"\xff\xc0\x00\x11\x08" + struct.pack(">HH", 480, 640) + bytes(12)
    assert sniff_mime(jpeg) == "image/jpeg"
    assert image_size(jpeg) == (640, 480)


def test_wav_is_16khz_mono_pcm_and_its_length_is_read_back() -> None:
    data = wav_bytes(np.arange(8000, dtype=np.int16))
    with wave.open(BytesIO(data)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (
            1,
            2,
            16_000,
        )
        assert np.array_equal(
            np.frombuffer(wav.readframes(8000), "<i2"), np.arange(8000)
        )
    assert wav_info(data) == (1, 16_000, 0.5)
    assert sniff_mime(data) == "audio/wav"
    assert wav_info(b"RIFF....WAVEjunk") is None


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        (b"fLaC\x00\x00", "audio/flac"),
        (b"OggS\x00", "audio/ogg"),
        (b"ID3\x04", "audio/mpeg"),
        (b"GIF89a", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"\x00\x00\x00\x18ftypmp42", "video/mp4"),
        (b"hello", None),
    ],
)
def test_sniffing_by_magic_numbers(head: bytes, mime: str | None) -> None:
    assert sniff_mime(head) == mime


def test_tensors_become_pixels() -> None:
    chw = np.stack([np.full((2, 3), v, np.float32) for v in (0.0, 0.5, 1.0)])
    assert pixels_of(chw).tolist() == [[[0, 128, 255]] * 3] * 2
    normalised = np.array([[-2.0, 0.0, 2.0]], np.float32)  # stretched min..max
    assert pixels_of(normalised)[0, :, 0].tolist() == [0, 128, 255]
    grey = np.zeros((4, 5), np.uint8)
    assert pixels_of(grey).shape == (4, 5, 3)
    with pytest.raises(DatasetError, match="cannot be sent as a picture"):
        pixels_of(np.zeros((2, 2, 2, 2), np.float32))


def test_samples_are_sent_as_files() -> None:
    wave_sample = Sample(index=3, audio=np.full(16_000, 0.5, np.float32))
    (clip,) = encoded_media(wave_sample)
    assert clip.name == "sample_000003.wav" and wav_info(clip.data) == (1, 16_000, 1.0)
    image_sample = Sample(index=4, image=np.zeros((3, 8, 6), np.float32))
    (picture,) = encoded_media(image_sample)
    assert picture.mime == "image/png" and image_size(picture.data) == (6, 8)
    assert encoded_media(Sample(index=5, prompt="text only")) == ()


@pytest.mark.parametrize(
    ("fmt", "task", "kind"),
    [
        ("vlm-jsonl", "x", "vision-chat"),
        ("librispeech", "x", "speech"),
        ("coco-captions", "x", "text-to-image"),
        ("text-lines", "text to video", "text-to-video"),
        ("something", "speech recognition", "speech"),
        ("something", "text to video", "text-to-video"),
        ("openorca-pickle", "question answering (LLM)", None),
    ],
)
def test_modality_from_format_then_task(fmt: str, task: str, kind: str | None) -> None:
    assert modality(_bench(fmt, task)) == kind  # type: ignore[arg-type]


def test_synthetic_sets_send_files() -> None:
    opts = DatasetOptions(samples=3, seed=5)
    vision = build_qsl(get_benchmark("qwen3-vl-235b-a22b"), options=opts)
    sample = vision.sample(2)
    assert sample.prompt and sample.reference
    (picture,) = sample.media
    assert picture.mime == "image/png" and image_size(picture.data) == (448, 448)
    assert vision.sample(2).media[0].data == picture.data  # same seed, same bytes
    assert vision.reference(2) == sample.reference

    speech = build_qsl(get_benchmark("whisper"), options=opts)
    (clip,) = speech.sample(0).media
    channels, rate, seconds = wav_info(clip.data) or (0, 0, 0.0)
    assert (channels, rate) == (1, 16_000) and 0.0 < seconds <= 30.0

    for name in ("stable-diffusion-xl", "wan-2.2-t2v-a14b"):
        captions = build_qsl(get_benchmark(name), options=opts)
        assert captions.sample(1).prompt == captions.sample(1).reference
        assert captions.sample(1).media == ()


def test_image_folder_with_a_question_beside_one_image(tmp_path: Path) -> None:
    (tmp_path / "b.png").write_bytes(_png(value=2))
    (tmp_path / "a.png").write_bytes(_png(value=1))
    (tmp_path / "a.txt").write_text("How many squares?\n")
    (tmp_path / "notes.md").write_text("ignored")
    bench = _bench("vlm-jsonl")
    assert sniff_media(tmp_path) == "image-folder"
    qsl = build_qsl(bench, tmp_path)  # type: ignore[arg-type]
    assert qsl.total_sample_count == 2
    first, second = qsl.sample(0), qsl.sample(1)
    assert first.prompt == "How many squares?"
    assert first.media[0].data == _png(value=1) and first.media[0].name == "a.png"
    assert second.prompt == "Describe this image in detail."


def test_mmmu_style_jsonl_with_paths_data_urls_and_options(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "q1.png").write_bytes(_png(value=9))
    url = "data:image/png;base64," + base64.b64encode(_png(value=3)).decode()
    rows = [
        {
            "question": "Which <image 1> is larger?",
            "options": "['left', 'right']",
            "answer": "B",
            "image_1": "img/q1.png",
            "image_2": url,
        },
        {"prompt": "Name it.", "images": [url], "max_tokens": 12},
    ]
    path = tmp_path / "mmmu.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert sniff_format(path) == "vlm-jsonl"
    qsl = build_qsl(_bench("vlm-jsonl"), path)  # type: ignore[arg-type]
    first = qsl.sample(0)
    assert first.prompt == "Which <image 1> is larger?\nA. left\nB. right"
    assert [m.data for m in first.media] == [_png(value=9), _png(value=3)]
    assert first.reference == "B" and qsl.reference(0) == "B"
    assert qsl.sample(1).output_tokens == 12


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"image": "a.png"}', 'no "question"'),
        ('{"question": "q"}', "no image"),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "not JSON"),
    ],
)
def test_bad_vision_rows_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "ok", "image": "x.png"}\n' + line + "\n")
    with pytest.raises(DatasetError, match=message) as err:
        build_qsl(_bench("vlm-jsonl"), path)  # type: ignore[arg-type]
    assert "bad.jsonl:2" in str(err.value)


def test_an_image_that_is_not_one_is_a_dataset_error(tmp_path: Path) -> None:
    (tmp_path / "x.png").write_bytes(b"not an image")
    qsl = build_qsl(_bench("vlm-jsonl"), tmp_path)  # type: ignore[arg-type]
    with pytest.raises(DatasetError, match="not an image"):
        qsl.sample(0)


def test_librispeech_folder(tmp_path: Path) -> None:
    chapter = tmp_path / "dev-clean" / "84" / "121123"
    chapter.mkdir(parents=True)
    (chapter / "84-121123-0000.wav").write_bytes(_wav(1.0))
    (chapter / "84-121123-0001.wav").write_bytes(_wav(2.0))
    (chapter / "84-121123.trans.txt").write_text(
        "84-121123-0000 GO DO YOU HEAR\n84-121123-0001 BUT IN LESS THAN FIVE MINUTES\n"
    )
    assert sniff_media(tmp_path) == "librispeech"
    qsl = build_qsl(_bench("librispeech"), tmp_path)  # type: ignore[arg-type]
    assert qsl.total_sample_count == 2
    assert qsl.reference(1) == "BUT IN LESS THAN FIVE MINUTES"
    clip = qsl.sample(1).media[0]
    assert clip.mime == "audio/wav" and wav_info(clip.data) == (1, 16_000, 2.0)


def test_librispeech_listing_without_its_audio(tmp_path: Path) -> None:
    (tmp_path / "1-2.trans.txt").write_text("1-2-0000 HELLO\n")
    with pytest.raises(DatasetError, match="no audio file for '1-2-0000'"):
        build_qsl(_bench("librispeech"), tmp_path)  # type: ignore[arg-type]


def test_mlperf_whisper_manifest_drops_clips_over_30s(tmp_path: Path) -> None:
    (tmp_path / "a.wav").write_bytes(_wav(1.0))
    (tmp_path / "b.wav").write_bytes(_wav(1.0))
    manifest = [
        {
            "transcript": "hello world",
            "files": [{"fname": "a.wav"}],
            "original_duration": 1.0,
        },
        {
            "transcript": "too long",
            "files": [{"fname": "b.wav"}],
            "original_duration": 31.0,
        },
        {
            "transcript": "again",
            "files": [{"fname": "b.wav"}],
            "original_duration": 30.0,
        },
    ]
    path = tmp_path / "dev-all-repack.json"
    path.write_text(json.dumps(manifest, indent=2))
    assert sniff_format(path) == "librispeech"
    qsl = build_qsl(_bench("librispeech"), path)  # type: ignore[arg-type]
    assert [qsl.reference(i) for i in range(qsl.total_sample_count)] == [
        "hello world",
        "again",
    ]


def test_jsonl_audio_manifest(tmp_path: Path) -> None:
    (tmp_path / "a.wav").write_bytes(_wav(0.5))
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"audio_filepath": "a.wav", "text": "hi"}) + "\n")
    qsl = build_qsl(_bench("librispeech"), path)  # type: ignore[arg-type]
    assert qsl.sample(0).reference == "hi" and qsl.sample(0).media[0].name == "a.wav"


def test_coco_captions_tsv_is_sdxl_prompts(tmp_path: Path) -> None:
    path = tmp_path / "captions.tsv"
    path.write_text(
        "id\timage_id\tcaption\theight\twidth\tfile_name\n"
        "70\t227049\tA city at night.\t640\t480\tCOCO_val2014_000000227049.jpg\n"
        "277\t288229\tA large clock.\t640\t425\tCOCO_val2014_000000288229.jpg\n"
    )
    qsl = build_qsl(get_benchmark("stable-diffusion-xl"), path)
    assert qsl.total_sample_count == 2
    assert qsl.sample(1).prompt == "A large clock." == qsl.sample(1).reference


def test_captions_without_a_caption_column(tmp_path: Path) -> None:
    path = tmp_path / "captions.tsv"
    path.write_text("id\ttext\n1\tx\n")
    with pytest.raises(DatasetError, match="no 'caption' column"):
        build_qsl(get_benchmark("stable-diffusion-xl"), path)


def test_prompt_lists_for_video_but_imagenet_lists_stay_imagenet(
    tmp_path: Path,
) -> None:
    prompts = tmp_path / "vbench_prompts.txt"
    prompts.write_text("a cat playing piano\n\na drone over mountains\n")
    wan = get_benchmark("wan-2.2-t2v-a14b")
    qsl = build_qsl(wan, prompts)
    assert [qsl.sample(i).prompt for i in range(2)] == [
        "a cat playing piano",
        "a drone over mountains",
    ]
    val_map = tmp_path / "val_map.txt"
    val_map.write_text("ILSVRC2012_val_00000001.JPEG 65\n")
    assert sniff_format(val_map) == "imagenet"
    assert sniff_format(prompts) == "imagenet"  # a text benchmark does not guess media
