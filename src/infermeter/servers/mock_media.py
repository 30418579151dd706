"""The mock server's multimodal routes: transcriptions, image and video generation.

Same timing modes and faults as the text routes. A request is checked first
(``media_checks``: a malformed upload, a missing file or prompt is a 400 with
the reason) and its summary recorded. Times come from the mock's token timing:

* a transcription emits ``tok `` tokens, about three per second of WAV audio
  (``max_completion_tokens`` caps them), streamed as chat-shaped chunks when
  asked (``stream=true``, as vLLM does) or one ``{"text"}`` answer;
* an image or a video takes ``ttft + (steps - 1) * itl`` (``num_inference_steps``,
  default 20: denoising steps play the part of tokens);
* videos follow OpenAI's job flow (``queued`` -> ``in_progress`` ->
  ``completed``, content at ``/v1/videos/{id}/content``), or answer the POST
  with the video itself when the mock runs with ``video_sync``.

Generated files are placeholders: a flat grey PNG of the requested size and an
MP4 container (``ftyp`` + ``mdat`` boxes) that holds no frames.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import math
import struct
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from aiohttp import web

from infermeter.servers import media_checks as checks
from infermeter.servers.faults import Fault, FaultConfig, FaultPicker
from infermeter.servers.mock_stream import ParsedRequest, respond
from infermeter.servers.timing import MockRequest, TokenPlan, TokenTiming
from infermeter.workloads.datasets.media_files import png_bytes

TOKENS_PER_AUDIO_SECOND = 3.0  # ~150 spoken words a minute, ~1.3 tokens a word
MAX_TRANSCRIPT_TOKENS = 448  # Whisper's decoder length
MAX_JOBS = 10_000
Parse = Callable[[bytes, str], dict[str, Any]]
Answer = Callable[[web.Request, dict[str, Any], Fault], Awaitable[web.StreamResponse]]


@lru_cache(maxsize=16)
def grey_png_b64(width: int, height: int) -> str:
    """A flat grey PNG of the size asked for, base64 (cached: sizes repeat)."""
    pixels = np.full((height, width, 3), 128, dtype=np.uint8)
    return base64.b64encode(png_bytes(pixels)).decode("ascii")


def _box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


PLACEHOLDER_MP4 = _box(b"ftyp", b"isom\x00\x00\x02\x00isomiso2mp41") + _box(
    b"mdat", bytes(1024)
)


def _error(status: int, message: str, kind: str) -> web.Response:
    body = {"error": {"message": message, "type": kind, "code": status}}
    return web.json_response(body, status=status)


def _plan_seconds(plan: TokenPlan) -> float:
    gaps = float(plan.gaps_s.sum()) if plan.gaps_s is not None else 0.0
    return plan.ttft_s + gaps


@dataclass(slots=True)
class _Job:
    """A video job: when it was asked for and when it is done (loop seconds)."""

    id: str
    model: str
    seconds: int
    size: str
    created: float
    done_at: float

    def status(self, now: float) -> dict[str, Any]:
        span = max(self.done_at - self.created, 1e-9)
        progress = min(100, math.floor(100 * (now - self.created) / span))
        state = "completed" if now >= self.done_at else "in_progress"
        return {
            "id": self.id,
            "object": "video",
            "model": self.model,
            "status": state if progress > 0 or state == "completed" else "queued",
            "progress": progress,
            "created_at": int(time.time()),
            "seconds": str(self.seconds),
            "size": self.size,
            "error": None,
        }


class MediaSettings(Protocol):
    """The settings the media routes read (``mock.MockConfig`` has them)."""

    @property
    def model(self) -> str: ...
    @property
    def check_model(self) -> bool: ...
    @property
    def video_sync(self) -> bool: ...
    @property
    def faults(self) -> FaultConfig: ...


class MediaHost(Protocol):
    """What the media routes share with the app serving them (``mock.MockApp``).

    A protocol, so this module needs nothing of ``mock`` (which builds the routes).
    """

    timing: TokenTiming
    picker: FaultPicker | None
    stats: Counter[str]
    in_flight: int

    @property
    def config(self) -> MediaSettings: ...

    def record(self, route: str, summary: dict[str, Any]) -> None: ...


class MediaRoutes:
    """The multimodal routes of one ``MockApp`` (its timing, faults, counters and log)."""

    def __init__(self, owner: MediaHost) -> None:
        self.owner = owner
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._ids = itertools.count(1)

    def add(self, app: web.Application) -> None:
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/images/generations", self._images)
        app.router.add_get("/v1/images/mock/{width}x{height}.png", self._image_file)
        app.router.add_post("/v1/videos", self._videos)
        app.router.add_get("/v1/videos/{id}", self._video_status)
        app.router.add_get("/v1/videos/{id}/content", self._video_content)

    # -- the shared path: check, record, draw a fault, answer ---------------------
    async def _serve(
        self, request: web.Request, route: str, parse: Parse, answer: Answer
    ) -> web.StreamResponse:
        owner = self.owner
        owner.stats["requests"] += 1
        owner.stats[f"{route}_requests"] += 1
        ctype = request.headers.get("Content-Type", "")
        try:
            summary = parse(await request.read(), ctype)
        except ValueError as exc:
            owner.stats["bad_request"] += 1
            return _error(400, f"{route}: {exc}", "invalid_request_error")
        owner.record(route, summary)
        model = summary.get("model")
        if owner.config.check_model and model and model != owner.config.model:
            owner.stats["unknown_model"] += 1
            return _error(404, f"The model `{model}` does not exist.", "NotFoundError")
        fault = owner.picker.pick() if owner.picker else Fault.NONE
        owner.stats[f"fault_{fault.value}"] += fault is not Fault.NONE
        if fault is Fault.ERROR:
            status = owner.config.faults.error_status
            return _error(status, "injected fault", "server_error")
        owner.in_flight += 1
        try:
            response = await answer(request, summary, fault)
        finally:
            owner.in_flight -= 1
        if fault in (Fault.NONE, Fault.SLOW_FIRST_BYTE):
            owner.stats["completed"] += 1
        return response

    async def _fault_before(self, request: web.Request, fault: Fault) -> None:
        """Faults of a one-body answer: a slow start, a stall or a reset."""
        faults = self.owner.config.faults
        if fault is Fault.SLOW_FIRST_BYTE:
            await asyncio.sleep(faults.slow_first_byte_s)
        if fault in (Fault.STALL, Fault.RESET):
            if fault is Fault.STALL:
                await asyncio.sleep(faults.stall_s)
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError  # the connection is gone

    def _plan(self, tokens: int, *, prompt_tokens: int = 0, stream: bool) -> TokenPlan:
        mock = MockRequest(
            prompt_tokens=prompt_tokens,
            max_tokens=tokens,
            ignore_eos=True,
            stream=stream,
            in_flight=self.owner.in_flight,
        )
        return self.owner.timing.plan(mock)

    # -- transcriptions -----------------------------------------------------------
    async def _transcriptions(self, request: web.Request) -> web.StreamResponse:
        def parse(body: bytes, ctype: str) -> dict[str, Any]:
            fields = checks.parse_multipart(body, ctype)
            summary = checks.transcription_fields(fields)
            cap = fields.get("max_completion_tokens")
            summary["max_tokens"] = (
                int(cap.text) if cap and cap.text.isdigit() else None
            )
            return summary

        return await self._serve(request, "transcriptions", parse, self._transcribe)

    async def _transcribe(
        self, request: web.Request, summary: dict[str, Any], fault: Fault
    ) -> web.StreamResponse:
        seconds = float(summary["audio"].get("seconds", 10.0))
        natural = min(
            MAX_TRANSCRIPT_TOKENS, max(1, round(seconds * TOKENS_PER_AUDIO_SECOND))
        )
        tokens = summary["max_tokens"] or natural
        mock = MockRequest(
            prompt_tokens=round(seconds * 50),  # Whisper's encoder: 50 frames a second
            max_tokens=tokens,
            ignore_eos=True,
            stream=summary["stream"],
            in_flight=self.owner.in_flight,
        )
        plan = self.owner.timing.plan(mock)
        self.owner.stats["tokens"] += plan.n_tokens
        if summary["stream"]:
            parsed = ParsedRequest(mock, True, summary["include_usage"], ())
            return await respond(
                request,
                parsed,
                plan,
                fault=fault,
                faults=self.owner.config.faults,
                model=self.owner.config.model,
                echo=False,
            )
        await self._fault_before(request, fault)
        await asyncio.sleep(_plan_seconds(plan))
        if fault is Fault.MALFORMED:
            return web.Response(
                body=b"{this is not json", content_type="application/json"
            )
        return _transcript(summary, plan.n_tokens, mock.prompt_tokens, seconds)

    # -- images -------------------------------------------------------------------
    async def _images(self, request: web.Request) -> web.StreamResponse:
        def parse(body: bytes, ctype: str) -> dict[str, Any]:
            return checks.generation_fields(
                checks.json_object(body, "images"), what="images"
            )

        return await self._serve(request, "images", parse, self._generate_images)

    async def _generate_images(
        self, request: web.Request, summary: dict[str, Any], fault: Fault
    ) -> web.StreamResponse:
        await self._fault_before(request, fault)
        plan = self._plan(summary["steps"] * summary["n"], stream=False)
        await asyncio.sleep(_plan_seconds(plan))
        if fault is Fault.MALFORMED:
            return web.Response(
                body=b"{this is not json", content_type="application/json"
            )
        width, height = summary["width"], summary["height"]
        if summary["response_format"] == "url":
            url = (
                f"{request.scheme}://{request.host}/v1/images/mock/{width}x{height}.png"
            )
            item = {"url": url}
        else:
            item = {"b64_json": grey_png_b64(width, height)}
        body = {"created": int(time.time()), "data": [item] * summary["n"]}
        return web.json_response(body)

    async def _image_file(self, request: web.Request) -> web.Response:
        try:
            fields = {
                "prompt": "x",
                "size": "{width}x{height}".format(**request.match_info),
            }
            summary = checks.generation_fields(fields, what="images")
        except ValueError as exc:
            return _error(400, str(exc), "invalid_request_error")
        png = base64.b64decode(grey_png_b64(summary["width"], summary["height"]))
        return web.Response(body=png, content_type="image/png")

    # -- videos -------------------------------------------------------------------
    async def _videos(self, request: web.Request) -> web.StreamResponse:
        def parse(body: bytes, ctype: str) -> dict[str, Any]:
            if ctype.startswith("multipart/"):
                obj = checks.form_as_json(checks.parse_multipart(body, ctype))
                summary = checks.generation_fields(obj, what="videos")
                summary["form"] = "multipart"
                return summary
            obj = checks.json_object(body, "videos")
            return {**checks.generation_fields(obj, what="videos"), "form": "json"}

        return await self._serve(request, "videos", parse, self._create_video)

    async def _create_video(
        self, request: web.Request, summary: dict[str, Any], fault: Fault
    ) -> web.StreamResponse:
        await self._fault_before(request, fault)
        plan = self._plan(summary["steps"], stream=False)
        now = asyncio.get_running_loop().time()
        job = _Job(
            id=f"video_mock_{next(self._ids)}",
            model=str(summary["model"] or self.owner.config.model),
            seconds=summary["seconds"],
            size=f"{summary['width']}x{summary['height']}",
            created=now,
            done_at=now + _plan_seconds(plan),
        )
        if fault is Fault.MALFORMED:
            return web.Response(
                body=b"{this is not json", content_type="application/json"
            )
        if self.owner.config.video_sync:
            await asyncio.sleep(_plan_seconds(plan))
            answer = job.status(job.done_at)
            answer["data"] = [{"b64_json": base64.b64encode(PLACEHOLDER_MP4).decode()}]
            return web.json_response(answer)
        self._jobs[job.id] = job
        while len(self._jobs) > MAX_JOBS:
            self._jobs.popitem(last=False)
        return web.json_response(job.status(now))

    def _job(self, request: web.Request) -> _Job | None:
        return self._jobs.get(request.match_info["id"])

    async def _video_status(self, request: web.Request) -> web.Response:
        job = self._job(request)
        if job is None:
            return _error(404, "no such video", "invalid_request_error")
        return web.json_response(job.status(asyncio.get_running_loop().time()))

    async def _video_content(self, request: web.Request) -> web.Response:
        job = self._job(request)
        if job is None:
            return _error(404, "no such video", "invalid_request_error")
        if asyncio.get_running_loop().time() < job.done_at:
            return _error(409, "the video is not ready yet", "invalid_request_error")
        return web.Response(body=PLACEHOLDER_MP4, content_type="video/mp4")


def _transcript(
    summary: dict[str, Any], n: int, prompt_tokens: int, seconds: float
) -> web.Response:
    text = "tok " * n
    fmt = summary["response_format"]
    if fmt in ("text", "srt", "vtt"):
        return web.Response(text=text, content_type="text/plain")
    usage = {
        "type": "tokens",
        "input_tokens": prompt_tokens,
        "output_tokens": n,
        "total_tokens": prompt_tokens + n,
    }
    body: dict[str, Any] = {"text": text, "usage": usage}
    if fmt == "verbose_json":
        body.update(
            task="transcribe", language="english", duration=seconds, segments=[]
        )
    return web.json_response(body)
