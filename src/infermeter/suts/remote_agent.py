"""The remote side of a remote client: one HTTP client that sends its slice at set times.

A remote client is a worker process or a Ray actor. Its ``RemoteAgent`` gets
slices of the schedule ahead of time (in its own clock), sends each request
at its scheduled time from an issue thread of its own, and hands events back
in batches through ``emit``: issue times, first tokens, completions and
failures, each stamped with ``perf_counter_ns`` (the agent's clock). The
coordinator (``suts/remote.py``) converts those stamps to its own clock.

In a closed loop the coordinator hands over samples with ``slots``, this
client's share of the loop's concurrency: they wait in a queue (``_SliceFeed``)
and each goes out as soon as one of the client's slots frees, drawn on the
event loop by the request that just ended (no round trip to the coordinator
per request); its issue event is stamped then.

Events are tuples: ``("i", ids, t)``, ``("f", id, t)``,
``("c", id, t, n_tokens, data)``, ``("x", id, t, reason)``, and
``("u", reason)`` when the endpoint became unreachable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import os
import pickle
import resource
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.clock import MonotonicClock
from infermeter.errors import ConfigError
from infermeter.loadgen.closed_loop import Launch
from infermeter.loadgen.interfaces import IdArray, QueryBatch, ResponseData, Stamps
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import ApiKey, OpenAIConfig
from infermeter.suts.prompts import Prompt, PromptSource

Event = tuple[Any, ...]
WAKE_MARGIN_NS = 2_000_000
Emit = Callable[[list[Event]], None]


def host_identity() -> dict[str, Any]:
    """Where an agent runs: host name, pid and the kernel's boot id.

    Two processes with the same boot id read the same CLOCK_MONOTONIC (the base
    of ``perf_counter_ns``), so their clocks need no correction.
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return {"host": socket.gethostname(), "pid": os.getpid(), "boot_id": boot}


def process_cpu_s() -> float:
    """CPU seconds (user + system) this process has used so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


class PromptList:
    """Every prompt of a source, copied: what a client process or actor receives when
    the source itself cannot be pickled (a QSL holding files or locks)."""

    def __init__(self, prompts: list[Prompt]) -> None:
        self._prompts = prompts

    def prompt(self, index: int) -> Prompt:
        return self._prompts[index % len(self._prompts)]


def portable_prompts(prompts: PromptSource) -> bytes:
    """``prompts`` pickled, or every prompt copied when the source cannot be."""
    try:
        return pickle.dumps(prompts)
    except Exception as exc:
        count = getattr(prompts, "count", None)
        if not isinstance(count, int) or count < 1:
            raise ConfigError(
                f"Remote clients need a picklable prompt source ({exc}); "
                "use --workers 1"
            ) from None
    return pickle.dumps(PromptList([prompts.prompt(i) for i in range(count)]))


class _ForwardSink:
    """The agent's CompletionSink: buffers events, emits them once per loop iteration."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self.loop: Any = None
        self.wants: dict[int, bool] = {}
        self.feed: _SliceFeed | None = None

    def push(self, event: Event) -> None:
        with self._lock:
            first = not self._events
            self._events.append(event)
        if first:
            self.loop.call_soon_threadsafe(self.flush)

    def flush(self) -> None:
        with self._lock:
            events, self._events = self._events, []
        if events:
            self._emit(events)

    def first_token(
        self,
        ids: IdArray,
        data: Sequence[ResponseData] | None = None,
        *,
        at_ns: Stamps | None = None,
    ) -> None:
        self.push(("f", int(ids[0]), time.perf_counter_ns()))

    def complete(
        self,
        ids: IdArray,
        *,
        n_tokens: Any = None,
        data: Sequence[ResponseData] | None = None,
        at_ns: Stamps | None = None,
    ) -> None:
        payload = bytes(data[0]) if data is not None else None
        tokens = None if n_tokens is None else int(n_tokens)
        self.push(("c", int(ids[0]), time.perf_counter_ns(), tokens, payload))
        self._freed(int(ids[0]))

    def fail(self, ids: IdArray, reason: str) -> None:
        self.push(("x", int(ids[0]), time.perf_counter_ns(), reason))
        self._freed(int(ids[0]))

    def _freed(self, sid: int) -> None:
        if self.feed is not None:
            self.feed.running.discard(sid)

    def wants_data(self, ids: IdArray) -> npt.NDArray[np.bool_]:
        return np.array([self.wants.pop(int(i), False) for i in ids], dtype=np.bool_)


class _SliceFeed:
    """This client's part of a closed loop: samples queued by the coordinator, sent
    as this client's ``slots`` free up (``OpenAIHttpSUT`` pumps it on its loop)."""

    ended = False  # the coordinator's feed ends the loop; this one only runs dry

    def __init__(self, sink: _ForwardSink) -> None:
        self._sink = sink
        self._queue: deque[tuple[int, int, int]] = deque()
        self._lock = threading.Lock()
        self.slots = 0
        self.running: set[int] = set()  # sent, not yet ended (on the loop only)

    @property
    def sink(self) -> _ForwardSink:
        return self._sink

    def add(
        self,
        ids: IdArray,
        indices: IdArray,
        scheduled_ns: IdArray,
        wants: npt.NDArray[np.bool_],
        slots: int,
    ) -> None:
        """Queue samples (any thread); ``slots``: how many may be in flight here."""
        for i in ids[wants].tolist():
            self._sink.wants[i] = True
        rows = zip(ids.tolist(), indices.tolist(), scheduled_ns.tolist(), strict=True)
        with self._lock:
            self.slots = slots
            self._queue.extend(rows)

    def pump(self, launch: Launch, extra: int = 0) -> None:
        """On the loop: send queued samples while a slot is free."""
        with self._lock:
            room = min(self.slots - len(self.running), len(self._queue))
            rows = [self._queue.popleft() for _ in range(max(0, room))]
        if not rows:
            return
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.running.update(ids.tolist())
        self._sink.push(("i", ids, time.perf_counter_ns()))
        launch(
            QueryBatch(
                ids,
                np.array([r[1] for r in rows], dtype=np.int64),
                np.array([r[2] for r in rows], dtype=np.int64),
            )
        )

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()


class RemoteAgent:
    """An ``OpenAIHttpSUT`` fed by scheduled slices; events go out through ``emit``.

    ``submit`` may be called from any thread and in any order: slices wait in
    a heap keyed by their scheduled time (the agent's clock).
    """

    def __init__(
        self,
        config: OpenAIConfig,
        prompts: PromptSource,
        api_key: str | None,
        emit: Emit,
    ) -> None:
        single = dataclasses.replace(config, workers=1, ray=None)
        key = ApiKey(api_key) if api_key else None
        self.sink = _ForwardSink(emit)
        self.sut = OpenAIHttpSUT(single, prompts, api_key=key)
        self.sink.loop = self.sut.loop
        self._feed = _SliceFeed(self.sink)
        self.sink.feed = self._feed
        # An endpoint that stops accepting connections ends the run (the coordinator
        # hands this on to the engine's stop signal).
        self.sut.reachability.on_unreachable = lambda reason: self.sink.push(
            ("u", reason)
        )
        self._clock = MonotonicClock()
        self._heap: list[tuple[int, int, int, bool]] = []
        self._lock = threading.Lock()
        self._more = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._issue_loop, name="infermeter-agent-issue", daemon=True
        )
        self._thread.start()

    def submit(
        self,
        ids: IdArray,
        indices: IdArray,
        scheduled_ns: IdArray,
        wants: npt.NDArray[np.bool_],
        slots: int = 0,
    ) -> None:
        """Queue samples to send at ``scheduled_ns`` (this agent's clock; past = now).

        ``slots`` > 0: closed-loop samples, each sent when one of ``slots`` frees.
        """
        if slots > 0:
            self._feed.add(ids, indices, scheduled_ns, wants, slots)
            self.sut.drive_closed_loop(self._feed)  # pumps on the loop
            return
        rows = zip(
            scheduled_ns.tolist(),
            ids.tolist(),
            indices.tolist(),
            wants.tolist(),
            strict=True,
        )
        with self._lock:
            for t, i, index, want in rows:
                heapq.heappush(self._heap, (t, i, index, want))
        self._more.set()

    def _issue_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                # Cleared under the lock: a slice submitted after this read wakes the wait.
                self._more.clear()
                due = self._heap[0][0] if self._heap else None
            now = time.perf_counter_ns()
            if due is None:
                self._more.wait(0.5)
            elif due - now > WAKE_MARGIN_NS:
                # An earlier slice wakes this wait; the last stretch is slept precisely.
                self._clock.wait_for(self._more, due - WAKE_MARGIN_NS)
            else:
                self._clock.sleep_until(due)
                self._issue_due()

    def _issue_due(self) -> None:
        now = time.perf_counter_ns()
        rows = []
        with self._lock:
            while self._heap and self._heap[0][0] <= now:
                rows.append(heapq.heappop(self._heap))
        if not rows:
            return
        ids = np.array([r[1] for r in rows], dtype=np.int64)
        for r in rows:
            if r[3]:
                self.sink.wants[r[1]] = True
        batch = QueryBatch(
            ids,
            np.array([r[2] for r in rows], dtype=np.int64),
            np.array([r[0] for r in rows], dtype=np.int64),
        )
        self.sink.push(("i", ids, time.perf_counter_ns()))
        self.sut.issue_query(batch, self.sink)

    def report(self) -> dict[str, Any]:
        """Send times (ids, agent-clock ns), counters, CPU and fleet routes."""
        ids, sent = self.sut.send_times()
        return {
            "ids": ids,
            "sent": sent,
            "stats": self.sut.stats(),
            "cpu_s": process_cpu_s(),
            "routes": self.sut.routes(),
        }

    def reset(self) -> None:
        self._feed.clear()
        self.sut.reset_records()

    def close(self) -> None:
        self._stop.set()
        self._more.set()
        self._thread.join(5)
        with contextlib.suppress(Exception):
            self.sut.close()
