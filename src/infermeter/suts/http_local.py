"""The in-process transport of the HTTP client: an event loop in its own thread.

``issue_query`` hands each batch to the loop with one cross-thread call and
returns; every sample becomes one task that runs its exchange
(``SampleExchange``: one request, its first token, completion or failure to
the sink). A failed request is a failed sample, never an exception: the run
goes on. In a closed loop (``drive_closed_loop``) the engine's feed is drawn
on the loop instead: the task whose request just ended sends the next sample
itself, with no thread hop and no wait behind the loop's other callbacks.
Worker processes and Ray actors each run one of these (``remote_agent``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import numpy as np

from infermeter.clock import Clock, MonotonicClock
from infermeter.loadgen.closed_loop import Feed
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.suts.fleet import Fleet
from infermeter.suts.http_exchange import SampleExchange
from infermeter.suts.http_wire import new_event_loop
from infermeter.suts.openai_request import ApiKey, OpenAIConfig
from infermeter.suts.prompts import PromptSource
from infermeter.suts.reachability import Reachability
from infermeter.suts.sse import StreamState


class OpenAIHttpSUT:
    """Sends each sample to ``/v1/completions`` or ``/v1/chat/completions``.

    Or to a media API (transcriptions, images, videos: ``media_exchange``).

    Use as a context manager, or call ``close()``: it owns a thread.
    """

    name = "openai"
    # Take the engine's closed loop onto the event loop (``drive_closed_loop``);
    # False keeps it on the engine's issue thread (for side-by-side measurements).
    runs_closed_loop = True

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
        self._clock = clock or MonotonicClock()
        self._url = config.endpoint
        self._fleet = Fleet(config, prompts) if len(config.urls) > 1 else None
        self.reachability = Reachability(config.unreachable_after_s, self._clock)
        self.exchange = SampleExchange(
            config, prompts, self.reachability, api_key=api_key
        )
        self._sent_ids: list[int] = []
        self._sent_ns: list[int] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots: asyncio.Semaphore | None = None
        self._feed: Feed | None = None  # set on the loop only
        self._loop = new_event_loop(config.use_uvloop)
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="infermeter-http", daemon=True
        )
        self._thread.start()
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

    # -- ClosedLoopSUT: the closed loop on the event loop, no thread hop ---
    def drive_closed_loop(self, feed: Feed) -> bool:
        """Draw the next query on the loop as each one completes (``closed_loop.py``)."""
        if not self.runs_closed_loop:
            return False
        self._loop.call_soon_threadsafe(self._feed_from, feed)
        return True

    def launch_now(self, batch: QueryBatch, sink: CompletionSink) -> None:
        """On the loop: start ``batch`` at once (a caller that runs the loop here)."""
        self._launch(batch, sink, sink.wants_data(batch.ids))

    # -- LoadWatcher: request bodies are built as samples load (untimed) ------
    def samples_loaded(self, indices: Any) -> None:
        """Build the bodies of loaded samples now, not on their first request.

        A media body (base64 images, uploads) takes milliseconds per megabyte,
        which would otherwise land on the event loop inside the timed run.
        """
        for index in np.asarray(indices, dtype=np.int64).tolist():
            self.exchange.body(index)

    def samples_unloaded(self, indices: Any) -> None:
        """Forget the bodies of unloaded samples (accuracy runs load in batches)."""
        for index in np.asarray(indices, dtype=np.int64).tolist():
            self.exchange.forget(index)

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
            **self.exchange.counts(),
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
        self.exchange.reset()
        if self._fleet is not None:
            self._fleet.reset()

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
        if self.config.max_in_flight:
            self._slots = asyncio.Semaphore(self.config.max_in_flight)
        await self.exchange.open()

    async def _close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.exchange.close()

    def _feed_from(self, feed: Feed) -> None:
        self._feed = feed
        feed.pump(self._launch_fed)

    def _launch_fed(self, batch: QueryBatch) -> None:
        assert self._feed is not None
        self.launch_now(batch, self._feed.sink)

    def _next_fed(self) -> tuple[int, int, bool, bool] | None:
        """The closed loop's next sample for the task whose request just ended.

        Running it in the same task sends it at once: a new task would wait
        behind every callback ready on the loop. Any more that fit get tasks.
        """
        feed = self._feed
        if feed is None:
            return None
        if feed.ended:  # the phase is over; an open-loop phase may follow
            self._feed = None
            return None
        due: list[QueryBatch] = []
        feed.pump(due.append)
        if not due:
            return None
        batch, sink = due[0], feed.sink
        wants = sink.wants_data(batch.ids)
        if len(batch) > 1:
            rest = QueryBatch(
                batch.ids[1:], batch.sample_indices[1:], batch.scheduled_ns[1:]
            )
            self._launch(rest, sink, wants[1:])
        want = bool(wants[0])
        keep = want or self.exchange.keeps_text
        return int(batch.ids[0]), int(batch.sample_indices[0]), keep, want

    def _launch(self, batch: QueryBatch, sink: CompletionSink, wants: Any) -> None:
        loop = self._loop
        keep = self.exchange.keeps_text
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
        while True:
            ids = np.array([sid], dtype=np.int64)
            if self._slots is None:
                await self._attempt(sid, index, sink, ids, keep, want)
            else:
                async with self._slots:
                    await self._attempt(sid, index, sink, ids, keep, want)
            # A closed loop run here: this task sends the next sample itself.
            following = self._next_fed()
            if following is None:
                return
            sid, index, keep, want = following

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
        exchange = self.exchange
        url = self._url if fleet is None else fleet.pick(sid, index)
        self._sent_ids.append(sid)
        self._sent_ns.append(self._clock.now_ns())
        try:
            outcome = await exchange.send(
                url, exchange.body(index), StreamState(keep_text=keep), sink, ids
            )
        except asyncio.CancelledError:
            # Closed after the run ended (completion timeout, interrupt): the
            # sample stays "never completed", as the run's summary counted it.
            raise
        except Exception as exc:  # every failure is the sample's, not the run's
            if fleet is not None:
                fleet.done(sid, ok=False)
            exchange.fail(exc, ids, sink)
            return
        if fleet is not None:
            fleet.done(sid, ok=True)
        exchange.complete(outcome, ids, sink, want)
