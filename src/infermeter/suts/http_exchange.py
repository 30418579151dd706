"""One exchange per request: the OpenAI request sent, its answer read and counted.

The core of the HTTP client (``suts/DESIGN.md``), the same in every transport
and for every user: a prepared body posted on the wire's session under the
config's timeouts, the streamed answer read by a ``StreamState`` (or a
subclass that keeps more, ``chat_answer``) into the first token
(``first_token``) and an outcome (``sse``), or a media API's answer
(``media_exchange``); then the output tokens counted (``token_count``), or one
failure reason (ids masked, the API key redacted).

``Exchange`` does that for any body; ``SampleExchange`` adds the run's
samples (a body built once per sample by ``openai_request.build_body``,
completion or failure given to the run's sink); the agentic turn sender
(``agentic_http``) posts chat turns through ``Exchange`` itself.

Every call runs on the client's event loop; nothing here knows where that
loop runs (this process, a worker process, a Ray actor).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import aiohttp
import numpy as np

from infermeter.errors import ConfigError, SUTProtocolError, SUTTimeoutError
from infermeter.loadgen.interfaces import CompletionSink
from infermeter.suts.http_wire import (
    HttpStatusError,
    open_fresh_session,
    open_mark,
    open_session,
    pooled_since,
)
from infermeter.suts.lean_wire import (
    BadAnswer,
    ConnectFailed,
    ConnectTimedOut,
    LeanPool,
    WireReset,
)
from infermeter.suts.media_exchange import media_exchange, response_bytes
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, build_body
from infermeter.suts.prompts import PromptSource
from infermeter.suts.reachability import Reachability, mask_ids, top_reasons
from infermeter.suts.sse import FirstToken, StreamOutcome, StreamState, parse_body
from infermeter.suts.token_count import (
    Tokenizer,
    TokenTally,
    count_tokens,
    load_tokenizer,
    recount_later,
)


class Exchange:
    """Posts prepared request bodies under ``config`` and reads their answers.

    The core every user of the HTTP client shares: the run's samples
    (``SampleExchange``) and agentic turns (``agentic_http``). ``open`` (on the
    event loop) before the first ``send``; ``close`` after the last.
    """

    def __init__(
        self,
        config: OpenAIConfig,
        reachability: Reachability,
        *,
        api_key: ApiKey | None = None,
    ) -> None:
        self.config = config
        self._key = api_key
        self.reachability = reachability
        self.tokenizer: Tokenizer | None = (
            load_tokenizer(config.tokenizer_file) if config.tokenizer_file else None
        )
        # A client-side token count needs the answer's text even when no log does.
        self.keeps_text = self.tokenizer is not None
        self.headers = {"Content-Type": "application/json"}
        if api_key is not None:
            self.headers["Authorization"] = api_key.header()
        self._media = media_exchange(
            config, self.headers, reached=lambda: reachability.reached()
        )
        # The lean wire (``lean_wire``) for plain http:// text; else aiohttp's.
        self.lean = (
            config.wire == "lean"
            and self._media is None
            and all(url.startswith("http://") for url in config.urls)
        )
        self._pool: LeanPool | None = None
        self._session: aiohttp.ClientSession | None = None
        self._fresh: aiohttp.ClientSession | None = None  # for resends, opened on need
        self.resent = 0
        self._tally = self._new_tally()
        # Tokenizer checks of the server's usage, done after the load (tally).
        self.recounts: list[tuple[int, str]] = []
        self.failures: Counter[str] = Counter()
        self.completed = 0

    async def open(self) -> None:
        if self.lean:
            self._pool = LeanPool(
                self.config.max_connections,
                self.config.timeouts.connect_s,
                on_answer=self.reachability.reached,
            )
        else:
            self._session = open_session(self.config)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        if self._session is not None:
            await self._session.close()
        if self._fresh is not None:
            await self._fresh.close()

    # -- the exchange ----------------------------------------------------------------
    async def send(
        self,
        url: str,
        body: bytes,
        state: StreamState,
        sink: FirstToken,
        ids: Any,
        headers: dict[str, str] | None = None,
    ) -> StreamOutcome:
        """Post ``body`` to ``url``; raises for any answer that fails it.

        ``state`` reads the streamed answer; on its first non-empty fragment
        ``sink.first_token(ids)`` is called as it arrives. ``headers`` replace
        ``self.headers`` (which they should include) for this request.
        """
        loop = asyncio.get_running_loop()
        t = self.config.timeouts
        start = loop.time()
        total = start + t.total_s if t.total_s else None
        first = start + t.first_token_s if t.first_token_s else None
        session = self._session
        try:
            async with asyncio.timeout_at(_earliest(first, total)) as scope:
                if session is None:
                    feed = None
                    if self.config.stream:
                        moves = first is not None  # else the deadline is the total
                        feed = _feeder(state, sink, ids, scope, total, moves)
                    outcome = await self._post_lean(url, body, headers, state, feed)
                mark = open_mark()
                while session is not None:  # once; twice if a pooled connection lost it
                    try:
                        outcome = await self._post(
                            session, url, body, headers, sink, ids, state, scope, total
                        )
                        break
                    except _Unanswered as unanswered:
                        session = self._resend_on(unanswered, mark, session)
        except (aiohttp.ConnectionTimeoutError, ConnectTimedOut):  # TimeoutError too
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
        if outcome.fragments == 0:
            raise SUTProtocolError(_empty_reason(outcome.usage_tokens))
        return outcome

    def _resend_on(
        self, unanswered: _Unanswered, mark: int, session: aiohttp.ClientSession
    ) -> aiohttp.ClientSession:
        """The session to resend on, once, a request a pooled connection lost
        before any answer: the server closed a kept-alive connection as the
        request came (llama-server's idle timer), so it never read it and no
        work is counted twice. A new connection for every resend. On a
        connection opened for the request, or a second time, the failure stands."""
        if session is not self._session or not pooled_since(mark):
            raise unanswered.exc from None
        if self._fresh is None:
            self._fresh = open_fresh_session(self.config)
        self.resent += 1
        return self._fresh

    async def _post_lean(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str] | None,
        state: StreamState,
        feed: Callable[[bytes], None] | None,
    ) -> StreamOutcome:
        """``_post`` on the lean wire: the answer's body goes from the socket's
        callback straight to ``feed`` (``_feeder``), or whole to ``parse_body``
        when not streamed (no ``feed``)."""
        pool = self._pool
        assert pool is not None
        sent = self.headers if headers is None else headers
        try:
            status, answer = await pool.post(url, sent, body, feed)
        except WireReset as exc:
            if not exc.unanswered:  # see _resend_on: the same rule, known exactly
                raise
            self.resent += 1
            status, answer = await pool.post(url, sent, body, feed, fresh=True)
        if status != 200:
            raise HttpStatusError(status, answer)
        return state.finish() if feed is not None else parse_body(answer)

    async def _post(
        self,
        session: aiohttp.ClientSession,
        url: str,
        body: bytes,
        headers: dict[str, str] | None,
        sink: FirstToken,
        ids: Any,
        state: StreamState,
        scope: asyncio.Timeout,
        total: float | None,
    ) -> StreamOutcome:
        if self._media is not None:
            return await self._media.exchange(
                session, url, body, sink, ids, state, scope, total
            )
        try:
            resp = await session.post(
                url, data=body, headers=self.headers if headers is None else headers
            )
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            if _unanswered(exc):
                raise _Unanswered(exc) from None
            raise
        async with resp:
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

    # -- the count -----------------------------------------------------------------
    def count(self, outcome: StreamOutcome) -> tuple[int, str]:
        """A completed answer's output tokens and their source (``token_count``)."""
        self.completed += 1
        return count_tokens(outcome, self.tokenizer, self._tally, self.recounts)

    def reason(self, exc: BaseException) -> str:
        """``exc``'s one-line failure reason, key redacted; counted."""
        self.reachability.failed(exc)
        reason = failure_reason(exc)
        if self._key is not None:
            reason = self._key.redact(reason)
        self.failures[reason] += 1
        return reason

    def counts(self) -> dict[str, Any]:
        """Completed and failed samples, the commonest reasons, the token tally
        (and requests resent after a pooled connection lost them, if any)."""
        counts = {
            "completed": self.completed,
            "failed": sum(self.failures.values()),
            "failure_reasons": top_reasons(self.failures),
            "token_counts": self.tally.as_dict(),
        }
        if self.resent:
            counts["resent_unanswered"] = self.resent
        return counts

    def reset(self) -> None:
        """Forget the counts (after a warm-up phase)."""
        self._tally = self._new_tally()
        self.recounts.clear()
        self.failures.clear()
        self.completed = 0
        self.resent = 0

    @property
    def tally(self) -> TokenTally:
        """The token counts by source (read after the load: the tokenizer's
        checks of the server's usage, kept out of the window, are done now)."""
        recount_later(self._tally, self.tokenizer, self.recounts)
        return self._tally

    def _new_tally(self) -> TokenTally:
        name = self.tokenizer.name if self.tokenizer is not None else None
        return TokenTally(tokenizer=name)


class SampleExchange(Exchange):
    """The run's samples: sample ``index``'s body built from ``prompts`` once,
    its answer completed or failed on the run's ``CompletionSink``."""

    def __init__(
        self,
        config: OpenAIConfig,
        prompts: PromptSource,
        reachability: Reachability,
        *,
        api_key: ApiKey | None = None,
    ) -> None:
        super().__init__(config, reachability, api_key=api_key)
        self._prompts = prompts
        self.bodies: dict[int, bytes] = {}  # by sample index, built once

    def body(self, index: int) -> bytes:
        """Sample ``index``'s request body, built on first use and kept."""
        body = self.bodies.get(index)
        if body is None:
            body = build_body(self.config, self._prompts.prompt(index))
            self.bodies[index] = body
        return body

    def forget(self, index: int) -> None:
        self.bodies.pop(index, None)

    def complete(
        self, outcome: StreamOutcome, ids: np.ndarray, sink: CompletionSink, want: bool
    ) -> None:
        """Count ``outcome``'s tokens and complete the sample (with its data if wanted)."""
        # count_tokens inline, not self.count: one call less per request.
        n_tokens, _ = count_tokens(outcome, self.tokenizer, self._tally, self.recounts)
        self.completed += 1
        data = [response_bytes(outcome)] if want else None
        sink.complete(ids, n_tokens=n_tokens, data=data)

    def fail(self, exc: BaseException, ids: np.ndarray, sink: CompletionSink) -> None:
        """Fail the sample with ``exc``'s one-line reason (a failure is never the run's)."""
        sink.fail(ids, self.reason(exc))


class _Unanswered(Exception):
    """The connection failed before any answer's status line came (``exc``)."""

    def __init__(self, exc: aiohttp.ClientError) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _unanswered(exc: aiohttp.ClientError) -> bool:
    """True when the connection was lost with nothing of an answer come: a
    disconnect before any status line (aiohttp's ServerDisconnectedError
    carries the partly parsed answer when one began) or a socket error while
    the request was written or awaited. A failed connect is not one (it was a
    new connection)."""
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return isinstance(exc.message, str)
    return not isinstance(exc, aiohttp.ClientConnectorError)


def failure_reason(exc: BaseException) -> str:
    """One short line saying why a request failed (ids masked, so reasons group)."""
    if isinstance(
        exc, HttpStatusError | SUTProtocolError | SUTTimeoutError | ConfigError
    ):
        text = str(exc)
    elif isinstance(exc, WireReset) and exc.silent:
        # Not a byte came: the server dropped the request, maybe unread.
        text = f"connection closed before any answer: {exc.kind}"
    elif isinstance(exc, aiohttp.ServerDisconnectedError) and _unanswered(exc):
        text = f"connection closed before any answer: {type(exc).__name__}"
    elif isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        text = f"connection reset mid-response: {type(exc).__name__}"
    elif isinstance(exc, WireReset):  # the lean wire's, worded as aiohttp's
        text = f"connection reset mid-response: {exc.kind}"
    elif isinstance(exc, ConnectFailed):
        text = f"cannot connect: {exc.strerror or exc}"
    elif isinstance(exc, BadAnswer):
        text = f"connection error: {type(exc).__name__}: {exc}"
    elif isinstance(exc, aiohttp.ClientConnectorError):
        text = f"cannot connect: {exc.os_error.strerror or exc.os_error}"
    elif isinstance(exc, aiohttp.ClientError | OSError):
        text = f"connection error: {type(exc).__name__}: {exc}"
    else:
        text = f"client error: {type(exc).__name__}: {exc}"
    return mask_ids(text.replace("\n", " "))[:300]


def _feeder(
    state: StreamState,
    sink: FirstToken,
    ids: Any,
    scope: asyncio.Timeout,
    total: float | None,
    moves: bool,
) -> Callable[[bytes], None]:
    """What the lean wire calls with each piece of a streamed answer: ``state``
    reads it; on the first token the sink hears of it and, when ``moves``, the
    deadline moves from the first-token limit to ``total`` (without a
    first-token limit it is ``total`` already, and a reschedule would still
    cancel and set a timer)."""

    def feed(chunk: bytes) -> None:
        if state.feed(chunk):
            sink.first_token(ids)
            if moves:
                scope.reschedule(total)

    return feed


def _earliest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _empty_reason(usage_tokens: int | None) -> str:
    """Why a 200 answer with no text fails its sample. ``transformers serve`` under
    concurrent load was seen closing streams whose ``usage`` counted tokens it never
    sent: the user got nothing, so the sample fails, and the reason says so."""
    if usage_tokens:
        return (
            "empty response: no text streamed, though the server's usage counts tokens"
        )
    return "empty response: no output tokens"
