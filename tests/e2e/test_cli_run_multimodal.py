"""``infermeter run`` of the multimodal benchmarks against ``serve-mock``: VALID, with timings.

Vision-language chat (qwen3-vl, streamed, images from an MMMU-style JSONL),
speech transcription (whisper, streamed, a LibriSpeech folder) and text to image
(SDXL). Each run's request bodies are read back from the mock (``/received``).
Latency checks are lower bounds (the mock's planned times), which no scheduler
delay can break.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.workloads.datasets.media_files import png_bytes, wav_bytes
from tests.cli_main import run_main

pytestmark = pytest.mark.integration
TTFT_S, ITL_S = 0.02, 0.002
# The mock's event loop keeps millisecond timers: a sleep may end up to ~1 ms early.
SLACK_S = 0.002


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    cfg = MockConfig(
        mode="timed",
        ttft=f"const:{TTFT_S}",
        itl=f"const:{ITL_S}",
        output_tokens="const:8",
    )
    with MockProcess(cfg) as url:
        yield url


def _received(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/received") as resp:
        records: list[dict[str, Any]] = json.loads(resp.read())
    return records


def _run(
    url: str, tmp: Path, benchmark: str, *extra: str
) -> tuple[dict[str, Any], str]:
    out = tmp / "run"
    args = [
        "run",
        "--sut",
        "openai",
        "--url",
        url,
        "--model",
        "mock-model",
        "--benchmark",
        benchmark,
        "--min-duration",
        "1s",
        "--output-dir",
        str(out),
        "--store",
        str(tmp / "store.db"),
        *extra,
    ]
    result = run_main(*args)
    assert result.code == 0, result.output
    summary = (out / "mlperf_log_summary.txt").read_text()
    assert "Result is : VALID" in summary
    run = json.loads((out / "run.json").read_text())
    assert run["metrics"]["samples_failed"] == 0
    return run, summary


def _vision_jsonl(tmp: Path) -> Path:
    rows = []
    for i in range(4):
        side = 56 * (i + 1)
        picture = png_bytes(np.full((side, side, 3), 40 * i, dtype=np.uint8))
        (tmp / f"p{i}.png").write_bytes(picture)
        rows.append({"question": f"What colour is picture {i}?", "image": f"p{i}.png"})
    url = (
        "data:image/png;base64,"
        + base64.b64encode(png_bytes(np.zeros((28, 28, 3), np.uint8))).decode()
    )
    rows.append(
        {"question": "And this one?", "options": ["black", "white"], "image_1": url}
    )
    path = tmp / "vlm.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


# 500 queries (enough for early stopping; 300 are not) in 2.5 s of arrivals.
SERVER = ["--scenario", "Server", "--target-qps", "200", "--min-query-count", "500"]


def test_vision_language_chat_run(mock_url: str, tmp_path: Path) -> None:
    dataset = _vision_jsonl(tmp_path)
    run, _ = _run(
        mock_url, tmp_path, "qwen3-vl-235b-a22b", *SERVER, "--dataset", str(dataset)
    )
    assert run["metrics"]["latency_ns"]["p50"] >= (TTFT_S + 7 * ITL_S - SLACK_S) * 1e9
    sides = {
        m["width"]
        for r in _received(mock_url)
        if r["route"] == "chat"
        for m in r["media"]
    }
    assert sides == {28, 56, 112, 168, 224}


def test_vision_language_chat_streams_ttft_and_tpot(
    mock_url: str, tmp_path: Path
) -> None:
    # MLPerf judges qwen3-vl end to end; a user.conf asks for token latencies
    # to see the streamed first token.
    conf = tmp_path / "user.conf"
    conf.write_text(
        "qwen3-vl-235b-a22b.Server.use_token_latencies = 1\n"
        "qwen3-vl-235b-a22b.Server.ttft_latency = 2000\n"
        "qwen3-vl-235b-a22b.Server.tpot_latency = 200\n"
    )
    run, summary = _run(
        mock_url,
        tmp_path,
        "qwen3-vl-235b-a22b",
        *SERVER,
        "--user-conf",
        str(conf),
        "--dataset",
        str(_vision_jsonl(tmp_path)),
        "--sut-opt",
        "max_tokens=8",
    )
    assert "TTFT Early Stopping Result:" in summary
    assert run["metrics"]["ttft_ns"]["p50"] >= (TTFT_S - SLACK_S) * 1e9
    assert run["metrics"]["tpot_ns"]["p50"] > 0
    chat = [r for r in _received(mock_url) if r["route"] == "chat"]
    assert chat and all(r["media"][0]["mime"] == "image/png" for r in chat)


def _librispeech(tmp: Path) -> Path:
    chapter = tmp / "dev-clean" / "1272" / "128104"
    chapter.mkdir(parents=True)
    lines = []
    for i in range(4):
        utt = f"1272-128104-{i:04d}"
        samples = np.zeros(16_000 * (i + 1), dtype=np.int16)
        (chapter / f"{utt}.wav").write_bytes(wav_bytes(samples))
        lines.append(f"{utt} WORDS OF CLIP {i}")
    (chapter / "1272-128104.trans.txt").write_text("\n".join(lines) + "\n")
    return tmp


def test_speech_transcription_run(mock_url: str, tmp_path: Path) -> None:
    dataset = _librispeech(tmp_path / "librispeech")
    _, summary = _run(
        mock_url,
        tmp_path,
        "whisper",
        "--scenario",
        "Offline",
        "--target-qps",
        "400",  # enough samples to outlast --min-duration at 8 in flight
        # 440 samples (400 QPS x 1 s, padded), over the 256 the mock keeps;
        # not mlperf.conf's whisper minimum of 1,633 (7 s of the run here)
        "--min-query-count",
        "300",
        "--dataset",
        str(dataset),
        "--sut-opt",
        "max_in_flight=8",
    )
    assert "Tokens per second" in summary
    # MLPerf reports no TTFT for Offline; every streamed first token is in records.npz.
    rec = np.load(tmp_path / "run" / "records.npz")
    ttft = rec["first_token_ns"] - rec["sent_ns"]
    assert (ttft >= (TTFT_S - SLACK_S) * 1e9).all() and (
        rec["first_token_ns"] <= rec["completed_ns"]
    ).all()
    assert set(rec["n_tokens"].tolist()) == {3, 6, 9, 12}  # usage: 3 a second of audio
    uploads = [r for r in _received(mock_url) if r["route"] == "transcriptions"]
    assert len(uploads) == 256  # the mock keeps the latest 256
    assert {r["audio"]["seconds"] for r in uploads} == {1.0, 2.0, 3.0, 4.0}
    assert all(r["stream"] and r["audio"]["rate"] == 16_000 for r in uploads)


def test_text_to_image_run(mock_url: str, tmp_path: Path) -> None:
    run, _ = _run(
        mock_url,
        tmp_path,
        "stable-diffusion-xl",
        *SERVER,
        "--sut-opt",
        "size=64x64",
        "--sut-opt",
        'extra_body={"num_inference_steps": 4}',
    )
    assert run["metrics"]["latency_ns"]["p50"] >= (TTFT_S + 3 * ITL_S - SLACK_S) * 1e9
    images = [r for r in _received(mock_url) if r["route"] == "images"]
    assert images and {
        (r["width"], r["steps"], r["response_format"]) for r in images
    } == {(64, 4, "b64_json")}
