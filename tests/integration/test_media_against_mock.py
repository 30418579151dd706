"""The multimodal APIs of the HTTP SUT against the mock server on 127.0.0.1 port 0.

The mock checks and records each request body (``MockApp.received``); these
tests read what it received, not what the client meant to send.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from infermeter.clock import MonotonicClock
from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import QueryBatch
from infermeter.loadgen.settings import Scenario
from infermeter.servers.faults import FaultConfig
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.servers.timing import MockRequest, TokenPlan
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_options import QSLPrompts
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.registry import SutContext, create_sut
from infermeter.testing import RecordingSink
from infermeter.workloads.datasets.base import DatasetQSL, SampleSource
from infermeter.workloads.datasets.encoded_media import EncodedMedia
from infermeter.workloads.datasets.media_files import sniff_mime
from infermeter.workloads.datasets.synthetic import SyntheticCaptions
from infermeter.workloads.datasets.synthetic_media import (
    SyntheticSpeech,
    SyntheticVisionPrompts,
)

pytestmark = pytest.mark.integration
N = 6


class FixedTiming:
    """Every answer: ``n`` tokens (capped by max_tokens), the first after ``ttft_s``."""

    def __init__(self, ttft_s: float = 0.0, n: int = 5) -> None:
        self.ttft_s = ttft_s
        self.n = n

    def plan(self, request: MockRequest) -> TokenPlan:
        return TokenPlan(min(self.n, request.max_tokens), self.ttft_s)


@contextlib.contextmanager
def serving(
    config: MockConfig, timing: FixedTiming | None = None
) -> Iterator[MockServer]:
    srv = MockServer(config, timing=timing)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def server() -> Iterator[MockServer]:
    with serving(MockConfig(mode="timed"), FixedTiming()) as srv:
        yield srv


def _vision() -> SampleSource:
    return EncodedMedia(SyntheticVisionPrompts(N, shape=(3, 96, 96)))


def _speech(max_seconds: float) -> SampleSource:
    return EncodedMedia(SyntheticSpeech(N, max_seconds=max_seconds))


def _run(url: str, api: str, source: SampleSource, **kw: Any) -> RecordingSink:
    config = OpenAIConfig(url=url, model="m", api=api, **kw)
    with OpenAIHttpSUT(config, QSLPrompts(DatasetQSL(source))) as sut:
        sink = RecordingSink()
        ids = np.arange(N, dtype=np.int64)
        sut.issue_query(QueryBatch(ids, ids, np.zeros(N, dtype=np.int64)), sink)
        assert sink.wait(N, timeout_s=30)
    return sink


def _received(server: MockServer, route: str) -> list[dict[str, Any]]:
    return [r for r in server.mock.received if r["route"] == route]


@pytest.mark.parametrize("stream", [True, False])
def test_vision_chat_sends_each_picture(server: MockServer, stream: bool) -> None:
    sink = _run(server.url, "chat", _vision(), stream=stream, max_tokens=5)
    assert sink.failed == {}
    # a whole answer has no first-token time; a stream has one per sample
    assert set(sink.first_tokens) == (set(range(N)) if stream else set())
    assert {t for t, _ in sink.completed.values()} == {5}  # usage tokens
    received = _received(server, "chat")
    assert len(received) == N
    for record in received:
        (image,) = record["media"]
        assert (image["mime"], image["width"], image["height"]) == ("image/png", 96, 96)
        assert image["tokens"] == 4 * 4


@pytest.mark.parametrize("stream", [True, False])
def test_transcriptions_upload_the_audio(server: MockServer, stream: bool) -> None:
    sink = _run(server.url, "transcriptions", _speech(2.0), stream=stream)
    assert sink.failed == {}
    assert set(sink.first_tokens) == (set(range(N)) if stream else set())
    assert all(data == b"tok " * tokens for tokens, data in sink.completed.values())
    received = _received(server, "transcriptions")
    assert len(received) == N
    for record in received:
        audio = record["audio"]
        assert (audio["mime"], audio["rate"], audio["channels"]) == (
            "audio/wav",
            16_000,
            1,
        )
        assert 0.8 <= audio["seconds"] <= 2.0  # 2.5 words a second, 0.4 s each
        assert record["stream"] is stream and record["model"] == "m"
        assert record["include_usage"] is stream


def test_image_generation_returns_a_png_per_prompt(server: MockServer) -> None:
    sink = _run(server.url, "images", SyntheticCaptions(N), size="64x32")
    assert sink.failed == {} and sink.first_tokens == {}  # latency only
    for _, data in sink.completed.values():
        assert data is not None and sniff_mime(data) == "image/png"
    received = _received(server, "images")
    assert {
        (r["width"], r["height"], r["n"], r["response_format"]) for r in received
    } == {(64, 32, 1, "b64_json")}
    assert all(r["prompt_words"] >= 12 for r in received)


@pytest.mark.parametrize("form", ["multipart", "json"])
def test_video_jobs_are_polled_until_their_content_is_ready(form: str) -> None:
    timing = FixedTiming(ttft_s=0.2)
    with serving(MockConfig(mode="timed"), timing) as srv:
        sink = _run(
            srv.url,
            "videos",
            SyntheticCaptions(N),
            video_form=form,
            poll_interval_s=0.05,
        )
        assert {r["form"] for r in _received(srv, "videos")} == {form}
    assert sink.failed == {}
    assert all(
        data is not None and data[4:8] == b"ftyp" for _, data in sink.completed.values()
    )


def test_video_answered_at_once(server: MockServer) -> None:
    with serving(MockConfig(mode="timed", video_sync=True), FixedTiming()) as srv:
        sink = _run(srv.url, "videos", SyntheticCaptions(N))
    assert sink.failed == {}
    assert all(
        data is not None and data[4:8] == b"ftyp" for _, data in sink.completed.values()
    )


def _http(
    url: str, body: bytes | None = None, ctype: str = "application/json"
) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_job_status_and_early_content_download() -> None:
    with serving(MockConfig(mode="timed"), FixedTiming(ttft_s=30.0)) as srv:
        status, body = _http(
            srv.url + "/videos", json.dumps({"prompt": "a cat"}).encode()
        )
        job = json.loads(body)
        assert status == 200 and job["status"] == "queued" and job["object"] == "video"
        status, body = _http(f"{srv.url}/videos/{job['id']}/content")
        assert status == 409 and b"not ready" in body
        status, body = _http(f"{srv.url}/videos/{job['id']}")
        assert json.loads(body)["status"] in ("queued", "in_progress")
        assert _http(srv.url + "/videos/nope")[0] == 404


@pytest.mark.parametrize(
    ("path", "body", "ctype", "reason"),
    [
        (
            "/audio/transcriptions",
            b"{}",
            "application/json",
            "multipart/form-data upload",
        ),
        (
            "/audio/transcriptions",
            b'--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nw\r\n--b--\r\n',
            "multipart/form-data; boundary=b",
            'no \\"file\\" part',
        ),
        (
            "/images/generations",
            b'{"n": 1}',
            "application/json",
            'non-empty \\"prompt\\"',
        ),
        ("/videos", b"not json", "application/json", "not JSON"),
        (
            "/chat/completions",
            json.dumps(
                {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}
            ).encode(),
            "application/json",
            'image_url part has no \\"url\\"',
        ),
    ],
)
def test_malformed_requests_get_a_400_with_the_reason(
    server: MockServer, path: str, body: bytes, ctype: str, reason: str
) -> None:
    status, answer = _http(server.url + path, body, ctype)
    assert status == 400
    assert reason in answer.decode()
    assert server.mock.stats["bad_request"] == 1


def test_faults_on_media_routes_fail_samples_with_reasons() -> None:
    faults = FaultConfig(error_rate=0.5, malformed_rate=0.5)
    config = MockConfig(mode="faults", ttft="const:0", itl="const:0", faults=faults)
    with serving(config) as srv:
        sink = _run(srv.url, "images", SyntheticCaptions(N))
    assert not sink.completed and len(sink.failed) == N
    reasons = set(sink.failed.values())
    errors = {r for r in reasons if r.startswith("HTTP 500:") and "injected fault" in r}
    malformed = {r for r in reasons if r.startswith("images: the answer is not JSON")}
    assert errors and malformed and reasons == errors | malformed


def test_a_reset_mid_transcription_stream_fails_the_sample() -> None:
    faults = FaultConfig(reset_rate=1.0, after_tokens=1)
    config = MockConfig(mode="faults", ttft="const:0", itl="const:0.001", faults=faults)
    with serving(config) as srv:
        sink = _run(srv.url, "transcriptions", _speech(1.5))
    assert set(sink.first_tokens) == set(range(N))  # one token came before the reset
    assert {r.split(":")[0] for r in sink.failed.values()} == {
        "connection reset mid-response"
    }


def test_received_log_is_served(server: MockServer) -> None:
    _run(server.url, "images", SyntheticCaptions(N))
    status, body = _http(server.url.removesuffix("/v1") + "/received")
    assert status == 200
    assert [r["route"] for r in json.loads(body)] == ["images"] * N


def _openai_sut(url: str, qsl: DatasetQSL, benchmark: str) -> OpenAIHttpSUT:
    context = SutContext(
        qsl=qsl,
        clock=MonotonicClock(),
        scenario=Scenario.OFFLINE,
        benchmark=benchmark,
        options={"url": url, "model": "m"},
    )
    sut = create_sut("openai", context)
    assert isinstance(sut, OpenAIHttpSUT)
    return sut


def test_bodies_are_built_when_samples_load_not_in_the_timed_run(
    server: MockServer,
) -> None:
    qsl = DatasetQSL(_vision())
    with _openai_sut(server.url, qsl, "qwen3-vl-235b-a22b") as sut:
        assert sut.config.api == "chat"  # the benchmark's modality picked it
        qsl.load_samples(np.arange(3, dtype=np.int64))
        assert sorted(sut.exchange.bodies) == [0, 1, 2]  # before any request was sent
        assert server.mock.stats["requests"] == 0
        qsl.unload_samples(np.arange(3, dtype=np.int64))
        assert sut.exchange.bodies == {}


def test_a_dataset_without_audio_stops_at_load(server: MockServer) -> None:
    qsl = DatasetQSL(SyntheticCaptions(N))
    with _openai_sut(server.url, qsl, "whisper") as sut:
        assert sut.config.api == "transcriptions"
        with pytest.raises(ConfigError, match="needs an audio file per sample"):
            qsl.load_samples(np.arange(2, dtype=np.int64))
