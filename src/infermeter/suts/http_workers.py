"""Several HTTP client processes behind one SUT, for loads one process cannot drive.

Each worker runs an ``OpenAIHttpSUT`` on its own event loop (its own GIL). The
parent splits every batch across workers with one pipe message per worker;
workers send back first tokens, completions and failures a loop iteration at a
time, and a receiver thread hands them to the engine's sink. Workers stamp
each event with ``perf_counter_ns`` (system-wide CLOCK_MONOTONIC, the base of
``MonotonicClock``); when the sink takes ``at_ns`` those stamps are used, else
the pipe hop (tens of microseconds) is added to each time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock, MonotonicClock
from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import (
    CompletionSink,
    IdArray,
    QueryBatch,
    ResponseData,
    Stamps,
)
from infermeter.suts.openai_request import ApiKey, OpenAIConfig
from infermeter.suts.prompts import PromptSource


class _ForwardSink:
    """The worker's sink: buffers events and sends them once per loop iteration."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._events: list[tuple[Any, ...]] = []
        self._loop: Any = None
        self.wants: dict[int, bool] = {}

    def _push(self, event: tuple[Any, ...]) -> None:
        if not self._events:
            self._loop.call_soon(self._flush)
        self._events.append(event)

    def _flush(self) -> None:
        events, self._events = self._events, []
        self._conn.send(("events", events))

    def first_token(
        self,
        ids: IdArray,
        data: Sequence[ResponseData] | None = None,
        *,
        at_ns: Stamps | None = None,  # the worker stamps its own times below
    ) -> None:
        self._push(("f", int(ids[0]), time.perf_counter_ns()))

    def complete(
        self,
        ids: IdArray,
        *,
        n_tokens: Any = None,
        data: Sequence[ResponseData] | None = None,
        at_ns: Stamps | None = None,
    ) -> None:
        payload = bytes(data[0]) if data is not None else None
        self._push(("c", int(ids[0]), time.perf_counter_ns(), n_tokens, payload))

    def fail(self, ids: IdArray, reason: str) -> None:
        self._push(("x", int(ids[0]), time.perf_counter_ns(), reason))

    def wants_data(self, ids: IdArray) -> npt.NDArray[np.bool_]:
        return np.array([self.wants.pop(int(i), False) for i in ids], dtype=np.bool_)


def _worker(
    conn: Connection, config: OpenAIConfig, prompts: PromptSource, key: str | None
) -> None:
    from infermeter.signals import ignore_interrupts
    from infermeter.suts.openai_http import OpenAIHttpSUT

    ignore_interrupts()  # the parent drains and closes us after Ctrl-C
    single = dataclasses.replace(config, workers=1)
    api_key = ApiKey(key) if key else None
    sink = _ForwardSink(conn)
    with OpenAIHttpSUT(single, prompts, api_key=api_key) as sut:
        sink._loop = sut.loop
        while True:
            message = conn.recv()
            if message[0] == "batch":
                _, ids, indices, scheduled, wants = message
                sink.wants.update(zip(ids.tolist(), wants.tolist(), strict=True))
                sut.issue_query(QueryBatch(ids, indices, scheduled), sink)
            elif message[0] == "report":
                ids_sent, sent = sut.send_times()
                conn.send(("report", ids_sent, sent, sut.stats()))
            elif message[0] == "reset":
                sut.reset_records()
            else:
                return


class WorkerPool:
    """``workers`` processes; ``issue_query`` splits each batch evenly across them."""

    def __init__(
        self,
        config: OpenAIConfig,
        prompts: PromptSource,
        api_key: ApiKey | None,
        *,
        monotonic: bool = True,
    ) -> None:
        ctx = multiprocessing.get_context("spawn")
        # The key crosses the pipe to the child once; it is never logged.
        secret = api_key.value if api_key is not None else None
        self._conns: list[Connection] = []
        self._procs = []
        for _ in range(config.workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_worker, args=(child, config, prompts, secret), daemon=True
            )
            try:
                proc.start()
            except Exception as exc:  # pickling the prompt source is the usual cause
                raise ConfigError(
                    f"--workers > 1 needs a picklable prompt source "
                    f"({exc}); use --workers 1"
                ) from None
            self._conns.append(parent)
            self._procs.append(proc)
        self._sink: CompletionSink | None = None
        self._stamped = False
        self._monotonic = monotonic
        self._reports: list[tuple[Any, ...]] = []
        self._reported = threading.Event()
        self._stop = False
        self._thread = threading.Thread(
            target=self._receive, name="infermeter-workers", daemon=True
        )
        self._thread.start()

    def issue(self, batch: QueryBatch, sink: CompletionSink) -> None:
        if sink is not self._sink:
            self._sink = sink
            self._stamped = self._monotonic
        wants = sink.wants_data(batch.ids)
        parts = np.array_split(np.arange(len(batch)), len(self._conns))
        for conn, part in zip(self._conns, parts, strict=True):
            if part.size:
                conn.send(
                    (
                        "batch",
                        batch.ids[part],
                        batch.sample_indices[part],
                        batch.scheduled_ns[part],
                        wants[part],
                    )
                )

    def _receive(self) -> None:
        open_conns = list(self._conns)
        while open_conns and not self._stop:
            for ready in wait(open_conns, timeout=0.5):
                conn = self._conns[self._conns.index(ready)]  # type: ignore[arg-type]
                try:
                    message: tuple[Any, ...] = conn.recv()
                except (EOFError, OSError):
                    open_conns.remove(conn)
                    continue
                if message[0] == "events":
                    self._dispatch(message[1])
                else:
                    self._reports.append(message)
                    if len(self._reports) == len(self._conns):
                        self._reported.set()

    def _dispatch(self, events: list[tuple[Any, ...]]) -> None:
        sink = self._sink
        assert sink is not None
        stamped = self._stamped
        firsts = [e for e in events if e[0] == "f"]
        if firsts:
            ids = np.array([e[1] for e in firsts], dtype=np.int64)
            if stamped:
                at = np.array([e[2] for e in firsts], dtype=np.int64)
                sink.first_token(ids, at_ns=at)
            else:
                sink.first_token(ids)
        for event in events:
            ids = np.array([event[1]], dtype=np.int64)
            if event[0] == "c":
                data = None if event[4] is None else [event[4]]
                if stamped:
                    sink.complete(ids, n_tokens=event[3], data=data, at_ns=event[2])
                else:
                    sink.complete(ids, n_tokens=event[3], data=data)
            elif event[0] == "x":
                sink.fail(ids, event[3])

    def report(self) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Send times and stats of every worker."""
        self._reports.clear()
        self._reported.clear()
        for conn in self._conns:
            conn.send(("report",))
        self._reported.wait(30)
        ids = (
            np.concatenate([r[1] for r in self._reports])
            if self._reports
            else np.zeros(0)
        )
        sent = (
            np.concatenate([r[2] for r in self._reports])
            if self._reports
            else np.zeros(0)
        )
        return (
            ids.astype(np.int64),
            sent.astype(np.int64),
            [r[3] for r in self._reports],
        )

    def reset(self) -> None:
        for conn in self._conns:
            conn.send(("reset",))

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(("stop",))
        for proc in self._procs:
            proc.join(10)
            if proc.is_alive():
                proc.terminate()
        self._stop = True
        self._thread.join(5)


class MultiProcessHttpSUT:
    """The HTTP SUT spread over ``config.workers`` processes (same interface)."""

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
        # Worker stamps are perf_counter_ns: only the real clock shares that base.
        monotonic = clock is None or isinstance(clock, MonotonicClock)
        self._pool = WorkerPool(config, prompts, api_key, monotonic=monotonic)

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self._pool.issue(batch, sink)

    def flush_queries(self) -> None:
        """Nothing is held back."""

    def send_times(self) -> tuple[np.ndarray, np.ndarray]:
        ids, sent, _ = self._pool.report()
        return ids, sent

    def stats(self) -> dict[str, Any]:
        _, _, stats = self._pool.report()
        total: dict[str, Any] = {
            "workers": len(stats),
            "requests": 0,
            "completed": 0,
            "failed": 0,
            "failure_reasons": {},
        }
        for part in stats:
            for key in ("requests", "completed", "failed"):
                total[key] += part[key]
            for reason, count in part["failure_reasons"].items():
                total["failure_reasons"][reason] = (
                    total["failure_reasons"].get(reason, 0) + count
                )
        return total

    def reset_records(self) -> None:
        self._pool.reset()

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> MultiProcessHttpSUT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
