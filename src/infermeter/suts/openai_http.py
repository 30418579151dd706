"""The OpenAI-compatible HTTP SUT: aiohttp on an event loop in its own thread.

``issue_query`` hands each batch to the loop with one cross-thread call and
returns; every sample becomes one request whose first token, completion or
failure goes to the sink. A failed request is a failed sample, never an
exception: the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

import aiohttp
import numpy as np

from infermeter.clock import Clock, MonotonicClock
from infermeter.errors import ConfigError, SUTProtocolError, SUTTimeoutError
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch, SystemUnderTest
from infermeter.suts.fleet import Fleet
from infermeter.suts.media_exchange import media_exchange, response_bytes
from infermeter.suts.openai_media import with_media_api
from infermeter.suts.openai_options import config_from_options, prompts_for
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, build_body
from infermeter.suts.prompts import PromptSource
from infermeter.suts.reachability import Reachability, mask_ids, top_reasons
from infermeter.suts.registry import SutContext, register
from infermeter.suts.sse import StreamOutcome, StreamState, parse_body
from infermeter.suts.token_count import (
    Tokenizer,
    TokenTally,
    count_tokens,
    load_tokenizer,
)

if TYPE_CHECKING:
    from infermeter.suts.http_workers import MultiProcessHttpSUT
    from infermeter.suts.ray_actors import RayHttpSUT


class HttpStatusError(Exception):
    """A non-200 answer; its message is the status and the server's own words."""

    def __init__(self, status: int, body: bytes) -> None:
        text = body[:200].decode("utf-8", "replace").replace("\n", " ").strip()
        super().__init__(f"HTTP {status}: {text}" if text else f"HTTP {status}")


# A pooled connection idle this long is closed, not reused: servers drop idle
# keep-alive connections after a few seconds (cpp-httplib in llama-server,
# uvicorn and Node after 5 s), and a request written into one just as the
# server drops it is lost unsent ("Can not write request body"). aiohttp's own
# limit (15 s) is past theirs. Below one request per 4 s a connection, each
# request opens its own (a LAN connect: well under a millisecond).
KEEPALIVE_S = 4.0


class OpenAIHttpSUT:
    """Sends each sample to ``/v1/completions`` or ``/v1/chat/completions``.

    Or to a media API (transcriptions, images, videos: ``media_exchange``).

    Use as a context manager, or call ``close()``: it owns a thread.
    """

    name = "openai"

    def __init__(
        self,
        config: OpenAIConfig,
        prompts: PromptSource,
        *,
        api_key: ApiKey | None = None,
        clock: Clock | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self._prompts = prompts
        self._key = api_key
        self._clock = clock or MonotonicClock()
        self._tokenizer: Tokenizer | None = (
            load_tokenizer(config.tokenizer_file) if config.tokenizer_file else None
        )
        self._bodies: dict[int, bytes] = {}
        self._url = config.endpoint
        self._fleet = Fleet(config, prompts) if len(config.urls) > 1 else None
        self._headers = {"Content-Type": "application/json"}
        if api_key is not None:
            self._headers["Authorization"] = api_key.header()
        self.tally = self._new_tally()
        self.failures: Counter[str] = Counter()
        self.completed = 0
        self.reachability = Reachability(config.unreachable_after_s, self._clock)
        self._media = media_exchange(
            config, self._headers, reached=lambda: self.reachability.reached()
        )
        self._sent_ids: list[int] = []
        self._sent_ns: list[int] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots: asyncio.Semaphore | None = None
        self._loop = new_event_loop(config.use_uvloop)
        self._session: aiohttp.ClientSession | None = None
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="infermeter-http", daemon=True
        )
        self._thread.start()
        _raise_fd_limit(config.max_connections + 64)
        asyncio.run_coroutine_threadsafe(self._open(), self._loop).result(30)

    @property
    def urls(self) -> tuple[str, ...]:
        """The base URL of each replica (one for a single endpoint)."""
        return self.config.urls

    @property
    def streams(self) -> bool:
        """False when answers come whole: then no first-token time is measured."""
        return self.config.stream

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the requests run on (its own thread)."""
        return self._loop

    # -- SystemUnderTest -------------------------------------------------
    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        wants = sink.wants_data(batch.ids)
        self._loop.call_soon_threadsafe(self._launch, batch, sink, wants)

    def flush_queries(self) -> None:
        """Nothing is held back: every sample is sent as soon as it is issued."""

    # -- LoadWatcher: request bodies are built as samples load (untimed) ------
    def samples_loaded(self, indices: Any) -> None:
        """Build the bodies of loaded samples now, not on their first request.

        A media body (base64 images, uploads) takes milliseconds per megabyte,
        which would otherwise land on the event loop inside the timed run.
        """
        for index in np.asarray(indices, dtype=np.int64).tolist():
            self._body(index)

    def samples_unloaded(self, indices: Any) -> None:
        """Forget the bodies of unloaded samples (accuracy runs load in batches)."""
        for index in np.asarray(indices, dtype=np.int64).tolist():
            self._bodies.pop(index, None)

    # -- results ---------------------------------------------------------
    def send_times(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, clock ns) of the moment each request left for the network."""
        return (
            np.asarray(self._sent_ids, dtype=np.int64),
            np.asarray(self._sent_ns, dtype=np.int64),
        )

    def stats(self) -> dict[str, Any]:
        """Counts for the run summary (no secrets)."""
        return {
            "requests": len(self._sent_ids),
            "completed": self.completed,
            "failed": sum(self.failures.values()),
            "failure_reasons": top_reasons(self.failures),
            "token_counts": self.tally.as_dict(),
            **({"fleet": self._fleet.stats()} if self._fleet else {}),
        }

    def params(self) -> dict[str, Any]:
        """The effective request settings, for run.json (no secret)."""
        return self.config.params()

    def routes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(ids, replica index) of every routed request; None for one endpoint."""
        return None if self._fleet is None else self._fleet.routes()

    def reset_records(self) -> None:
        """Forget send times and counts (after a warm-up phase; ids restart at 0)."""
        self._sent_ids.clear()
        self._sent_ns.clear()
        self.tally = self._new_tally()
        self.failures.clear()
        self.completed = 0
        if self._fleet is not None:
            self._fleet.reset()

    def _new_tally(self) -> TokenTally:
        name = self._tokenizer.name if self._tokenizer is not None else None
        return TokenTally(tokenizer=name)

    def close(self) -> None:
        """Cancel what is in flight, close the connections, stop the thread."""
        if not self._loop.is_running():
            return
        with contextlib.suppress(TimeoutError):
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def __enter__(self) -> OpenAIHttpSUT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- on the loop -----------------------------------------------------
    async def _open(self) -> None:
        t = self.config.timeouts
        if self.config.max_in_flight:
            self._slots = asyncio.Semaphore(self.config.max_in_flight)
        connector = aiohttp.TCPConnector(
            limit=self.config.max_connections,
            limit_per_host=0,
            ttl_dns_cache=300,
            keepalive_timeout=KEEPALIVE_S,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=t.connect_s or None),
            read_bufsize=self.config.read_bufsize,
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    async def _close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    def _launch(self, batch: QueryBatch, sink: CompletionSink, wants: Any) -> None:
        loop = self._loop
        keep = self._tokenizer is not None
        for sid, index, want in zip(
            batch.ids.tolist(),
            batch.sample_indices.tolist(),
            wants.tolist(),
            strict=True,
        ):
            task = loop.create_task(self._request(sid, index, sink, want or keep, want))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _request(
        self, sid: int, index: int, sink: CompletionSink, keep: bool, want: bool
    ) -> None:
        ids = np.array([sid], dtype=np.int64)
        if self._slots is None:
            await self._attempt(sid, index, sink, ids, keep, want)
            return
        async with self._slots:
            await self._attempt(sid, index, sink, ids, keep, want)

    async def _attempt(
        self,
        sid: int,
        index: int,
        sink: CompletionSink,
        ids: np.ndarray,
        keep: bool,
        want: bool,
    ) -> None:
        fleet = self._fleet
        url = self._url if fleet is None else fleet.pick(sid, index)
        self._sent_ids.append(sid)
        self._sent_ns.append(self._clock.now_ns())
        try:
            outcome = await self._exchange(index, sink, ids, keep, url)
            if outcome.fragments == 0:
                raise SUTProtocolError(_empty_reason(outcome.usage_tokens))
        except asyncio.CancelledError:
            # Closed after the run ended (completion timeout, interrupt): the
            # sample stays "never completed", as the run's summary counted it.
            raise
        except Exception as exc:  # every failure is the sample's, not the run's
            self.reachability.failed(exc)
            if fleet is not None:
                fleet.done(sid, ok=False)
            self._fail(ids, _reason(exc), sink)
            return
        if fleet is not None:
            fleet.done(sid, ok=True)
        n_tokens = count_tokens(outcome, self._tokenizer, self.tally)
        self.completed += 1
        data = [response_bytes(outcome)] if want else None
        sink.complete(ids, n_tokens=n_tokens, data=data)

    def _fail(self, ids: np.ndarray, reason: str, sink: CompletionSink) -> None:
        if self._key is not None:
            reason = self._key.redact(reason)
        self.failures[reason] += 1
        sink.fail(ids, reason)

    async def _exchange(
        self, index: int, sink: CompletionSink, ids: np.ndarray, keep: bool, url: str
    ) -> StreamOutcome:
        body = self._body(index)
        loop = asyncio.get_running_loop()
        t = self.config.timeouts
        start = loop.time()
        total = start + t.total_s if t.total_s else None
        first = start + t.first_token_s if t.first_token_s else None
        state = StreamState(keep_text=keep)
        try:
            async with asyncio.timeout_at(_earliest(first, total)) as scope:
                return await self._post(url, body, sink, ids, state, scope, total)
        except aiohttp.ConnectionTimeoutError:  # a TimeoutError too: tell it apart
            raise SUTTimeoutError(
                f"timeout: no connection within {t.connect_s:g} s"
            ) from None
        except TimeoutError:
            if state.fragments == 0 and first is not None:
                raise SUTTimeoutError(
                    f"timeout: no first token within {t.first_token_s:g} s"
                ) from None
            raise SUTTimeoutError(
                f"timeout: request took over {t.total_s:g} s"
            ) from None

    async def _post(
        self,
        url: str,
        body: bytes,
        sink: CompletionSink,
        ids: np.ndarray,
        state: StreamState,
        scope: asyncio.Timeout,
        total: float | None,
    ) -> StreamOutcome:
        assert self._session is not None
        if self._media is not None:
            return await self._media.exchange(
                self._session, url, body, sink, ids, state, scope, total
            )
        async with self._session.post(url, data=body, headers=self._headers) as resp:
            self.reachability.reached()
            if resp.status != 200:
                raise HttpStatusError(resp.status, await resp.read())
            if not self.config.stream:
                # A whole answer has no first-token time: TTFT/TPOT stay unmeasured.
                return parse_body(await resp.read())
            async for chunk in resp.content.iter_any():
                if state.feed(chunk):
                    sink.first_token(ids)
                    scope.reschedule(total)
            return state.finish()

    def _body(self, index: int) -> bytes:
        body = self._bodies.get(index)
        if body is None:
            body = build_body(self.config, self._prompts.prompt(index))
            self._bodies[index] = body
        return body


def _reason(exc: BaseException) -> str:
    """One short line saying why a request failed (ids masked, so reasons group)."""
    if isinstance(
        exc, HttpStatusError | SUTProtocolError | SUTTimeoutError | ConfigError
    ):
        text = str(exc)
    elif isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        text = f"connection reset mid-response: {type(exc).__name__}"
    elif isinstance(exc, aiohttp.ClientConnectorError):
        text = f"cannot connect: {exc.os_error.strerror or exc.os_error}"
    elif isinstance(exc, aiohttp.ClientError | OSError):
        text = f"connection error: {type(exc).__name__}: {exc}"
    else:
        text = f"client error: {type(exc).__name__}: {exc}"
    return mask_ids(text.replace("\n", " "))[:300]


def _earliest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def new_event_loop(use_uvloop: bool) -> asyncio.AbstractEventLoop:
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            return loop
    return asyncio.new_event_loop()


def _raise_fd_limit(wanted: int) -> None:
    # Each connection is a file descriptor; the default soft limit is often 1024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def create_http_sut(
    config: OpenAIConfig,
    prompts: PromptSource,
    *,
    api_key: ApiKey | None = None,
    clock: Clock | None = None,
) -> OpenAIHttpSUT | MultiProcessHttpSUT | RayHttpSUT:
    """One process, ``config.workers`` client processes, or Ray actors when asked for."""
    if config.ray is not None:
        from infermeter.suts.ray_actors import RayHttpSUT

        return RayHttpSUT(
            config,
            prompts,
            address=config.ray,
            actors=config.ray_actors,
            api_key=api_key,
            clock=clock,
        )
    if config.workers > 1:
        from infermeter.suts.http_workers import MultiProcessHttpSUT

        return MultiProcessHttpSUT(config, prompts, api_key=api_key, clock=clock)
    return OpenAIHttpSUT(config, prompts, api_key=api_key, clock=clock)


@register("openai")
def _create(context: SutContext) -> SystemUnderTest:
    config, key = config_from_options(with_media_api(context))
    sut = create_http_sut(
        config, prompts_for(context.qsl), api_key=key, clock=context.clock
    )
    watch = getattr(context.qsl, "watch", None)
    if callable(watch) and isinstance(sut, OpenAIHttpSUT):
        watch(sut)  # bodies built when samples load, outside the timed run
    return sut


def _empty_reason(usage_tokens: int | None) -> str:
    """Why a 200 answer with no text fails its sample. ``transformers serve`` under
    concurrent load was seen closing streams whose ``usage`` counted tokens it never
    sent: the user got nothing, so the sample fails, and the reason says so."""
    if usage_tokens:
        return (
            "empty response: no text streamed, though the server's usage counts tokens"
        )
    return "empty response: no output tokens"
