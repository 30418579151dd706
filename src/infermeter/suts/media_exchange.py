"""The multimodal APIs on the wire: send one request, read (or poll) its answer.

* transcriptions: a streamed answer when the server streams (vLLM's
  ``transcription.chunk`` events shaped like chat chunks, or OpenAI's
  ``transcript.text.delta`` / ``transcript.text.done``): the first token is the
  first text delta. Otherwise one JSON (``{"text"}``) or plain-text body.
* images: one JSON body with ``data[].b64_json`` (or ``url``); latency per image.
* videos: OpenAI's job flow (``POST /videos`` -> ``queued``, poll ``GET
  /videos/{id}`` every ``poll_interval`` until ``completed``, then ``GET
  /videos/{id}/content``), or a server that answers the POST with the video
  itself (``data[].b64_json`` / ``url``, as vLLM-Omni does). A polled latency
  is late by up to one poll interval.

A whole (non-streamed) answer has no first-token time: as for text, TTFT and
TPOT stay unmeasured and the latency is the answer's.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from infermeter.errors import SUTProtocolError
from infermeter.suts.http_wire import HttpStatusError
from infermeter.suts.openai_media import MEDIA_APIS, multipart_content_type
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.sse import (
    DONE,
    FirstToken,
    SSEDecoder,
    StreamOutcome,
    StreamState,
    parse_chunk,
)

JOB_RUNNING = ("queued", "in_progress", "pending", "processing", "running")
IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"RIFF", b"GIF8")


@dataclass(frozen=True, slots=True)
class MediaOutcome(StreamOutcome):
    """An answer whose accuracy-log data is a file: bytes, or base64 text decoded on demand."""

    payload: bytes | str | None = None


def response_bytes(outcome: StreamOutcome) -> bytes:
    """What the accuracy log keeps: the generated file, else the answer's text."""
    if isinstance(outcome, MediaOutcome) and outcome.payload is not None:
        if isinstance(outcome.payload, bytes):
            return outcome.payload
        return base64.b64decode(outcome.payload)
    return outcome.text.encode()


def _json(body: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(body)
    except ValueError:
        raise SUTProtocolError(
            f"{what}: the answer is not JSON: {body[:60]!r}"
        ) from None
    if not isinstance(obj, dict):
        raise SUTProtocolError(f"{what}: the answer is not a JSON object")
    error = obj.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise SUTProtocolError(f"{what}: server error: {message}")
    return obj


class TranscriptStream:
    """A streamed transcription in either dialect; ``feed`` is True on the first text."""

    def __init__(self) -> None:
        self._decoder = SSEDecoder()
        self._parts: list[str] = []
        self._usage: int | None = None
        self._ended = False
        self.fragments = 0

    def feed(self, chunk: bytes) -> bool:
        first = False
        for message in self._decoder.feed(chunk):
            first = self._message(message.data) or first
        return first

    def finish(self) -> StreamOutcome:
        for message in self._decoder.close():
            self._message(message.data)
        if not self._ended:
            raise SUTProtocolError("transcription stream ended before [DONE]")
        text = "".join(self._parts)
        return StreamOutcome(text, self.fragments, self._usage, "stop", self.fragments)

    def _message(self, data: bytes) -> bool:
        if data == DONE:
            self._ended = True
            return False
        obj = _json(data, "transcription stream")
        kind = obj.get("type")
        if kind == "transcript.text.done":  # OpenAI's dialect
            self._ended = True
            usage = obj.get("usage")
            tokens = usage.get("output_tokens") if isinstance(usage, dict) else None
            self._usage = tokens if isinstance(tokens, int) else self._usage
            return False
        if kind == "transcript.text.delta":
            return self._text(str(obj.get("delta") or ""))
        event = parse_chunk(data)  # vLLM's chat-shaped transcription.chunk
        if event.completion_tokens is not None:
            self._usage = event.completion_tokens
        self._ended = self._ended or event.finish_reason is not None
        return self._text(event.text)

    def _text(self, text: str) -> bool:
        if not text:
            return False
        self._parts.append(text)
        self.fragments += 1
        return self.fragments == 1


def _transcript(body: bytes, content_type: str) -> MediaOutcome:
    if "json" not in content_type and not body.lstrip().startswith(b"{"):
        plain = body.decode("utf-8", "replace")  # text, srt, vtt
        return MediaOutcome(plain, 1, None, "stop", 1, streamed=False)
    obj = _json(body, "transcription")
    text = obj.get("text")
    if not isinstance(text, str):
        raise SUTProtocolError('transcription: the answer has no "text" string')
    usage = obj.get("usage")
    tokens = None
    if isinstance(usage, dict):
        tokens = usage.get("output_tokens", usage.get("completion_tokens"))
    usage_tokens = tokens if isinstance(tokens, int) else None
    return MediaOutcome(text, 1, usage_tokens, "stop", 1, streamed=False)


def _generated(obj: dict[str, Any], what: str) -> MediaOutcome:
    """An images/videos answer with ``data[]`` items of ``b64_json`` or ``url``."""
    data = obj.get("data")
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise SUTProtocolError(f'{what}: the answer has no "data" items')
    first = data[0]
    b64, url = first.get("b64_json"), first.get("url")
    if isinstance(b64, str) and b64:
        if what == "images":
            _check_image(b64)
        return MediaOutcome("", len(data), None, "stop", len(data), False, b64)
    if isinstance(url, str) and url:
        return MediaOutcome(
            url, len(data), None, "stop", len(data), False, url.encode()
        )
    raise SUTProtocolError(f'{what}: data[0] has neither "b64_json" nor "url"')


def _check_image(b64: str) -> None:
    try:
        head = base64.b64decode(b64[:16], validate=True)
    except (binascii.Error, ValueError):
        raise SUTProtocolError("images: b64_json is not base64") from None
    if not head.startswith(IMAGE_MAGIC):
        raise SUTProtocolError("images: b64_json is not a PNG, JPEG, WebP or GIF image")


class MediaExchange:
    """One request of a media API on the SUT's session (called on its event loop)."""

    def __init__(
        self,
        config: OpenAIConfig,
        headers: dict[str, str],
        *,
        reached: Callable[[], None] = lambda: None,
    ) -> None:
        self.config = config
        self._reached = reached  # any HTTP answer: the endpoint is there
        self._json_headers = headers
        self._auth = {k: v for k, v in headers.items() if k != "Content-Type"}

    def _headers(self, body: bytes) -> dict[str, str]:
        if self.config.api == "transcriptions" or (
            self.config.api == "videos" and self.config.video_form == "multipart"
        ):
            return {**self._auth, "Content-Type": multipart_content_type(body)}
        return self._json_headers

    async def exchange(
        self,
        session: aiohttp.ClientSession,
        url: str,
        body: bytes,
        sink: FirstToken,
        ids: Any,
        state: StreamState,
        scope: asyncio.Timeout,
        total: float | None,
    ) -> StreamOutcome:
        async with session.post(url, data=body, headers=self._headers(body)) as resp:
            self._reached()
            if resp.status not in (200, 201, 202):
                raise HttpStatusError(resp.status, await resp.read())
            ctype = resp.headers.get("Content-Type", "")
            if self.config.api == "transcriptions" and "event-stream" in ctype:
                return await self._stream(resp, sink, ids, state, scope, total)
            answer = await resp.read()
        if self.config.api == "transcriptions":
            outcome = _transcript(answer, ctype)
        elif self.config.api == "images":
            outcome = _generated(_json(answer, "images"), "images")
        else:
            outcome = await self._video(session, url, _json(answer, "videos"))
        state.fragments = outcome.fragments
        return outcome

    async def _stream(
        self,
        resp: aiohttp.ClientResponse,
        sink: FirstToken,
        ids: Any,
        state: StreamState,
        scope: asyncio.Timeout,
        total: float | None,
    ) -> StreamOutcome:
        stream = TranscriptStream()
        async for chunk in resp.content.iter_any():
            if stream.feed(chunk):
                sink.first_token(ids)
                scope.reschedule(total)
            state.fragments = stream.fragments
        outcome = stream.finish()
        if outcome.fragments == 0:  # silence transcribes to nothing: still an answer
            state.fragments = 1
            return MediaOutcome("", 1, outcome.usage_tokens, "stop")
        return outcome

    async def _video(
        self, session: aiohttp.ClientSession, endpoint: str, job: dict[str, Any]
    ) -> MediaOutcome:
        if "data" in job:  # the server answered with the video itself
            return _generated(job, "videos")
        video_id = job.get("id")
        if not isinstance(video_id, str) or not video_id:
            raise SUTProtocolError(
                'videos: the answer has neither "data" nor a job "id"'
            )
        url = f"{endpoint}/{video_id}"
        while job.get("status") in JOB_RUNNING:
            await asyncio.sleep(self.config.poll_interval_s)
            job = _json(await self._get(session, url), "videos")
        if job.get("status") != "completed":
            error = job.get("error")
            reason = error.get("message") if isinstance(error, dict) else error
            raise SUTProtocolError(
                f"videos: job {video_id} ended {job.get('status')!r}: {reason or 'no reason'}"
            )
        content = await self._get(session, url + "/content")
        if not content:
            raise SUTProtocolError(f"videos: job {video_id} has empty content")
        return MediaOutcome("", 1, None, "stop", 1, False, content)

    async def _get(self, session: aiohttp.ClientSession, url: str) -> bytes:
        async with session.get(url, headers=self._auth) as resp:
            body = await resp.read()
            if resp.status != 200:
                raise HttpStatusError(resp.status, body)
            return body


def media_exchange(
    config: OpenAIConfig,
    headers: dict[str, str],
    *,
    reached: Callable[[], None] = lambda: None,
) -> MediaExchange | None:
    """The exchange for a media API; None for completions and chat (the text path)."""
    if config.api not in MEDIA_APIS:
        return None
    return MediaExchange(config, headers, reached=reached)
