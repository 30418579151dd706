"""Worker processes as remote clients: the process transport of ``suts/remote.py``.

Each worker is a spawned process running a ``RemoteAgent`` (its own GIL and
event loop). Two pipes per worker: the control pipe carries slices and
round-trip calls (clock, report, reset), the event pipe carries the agent's
stamped events back. A receiver watches the event pipes and the processes'
sentinels, so a worker that dies is seen at once, also during start-up.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import threading
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

import numpy as np

from infermeter.clock import Clock
from infermeter.errors import SUTError
from infermeter.loadgen.interfaces import IdArray
from infermeter.suts.openai_request import ApiKey, OpenAIConfig
from infermeter.suts.prompts import PromptSource
from infermeter.suts.remote import ClientLost, RemoteClientSUT
from infermeter.suts.remote_agent import (
    Event,
    RemoteAgent,
    host_identity,
    portable_prompts,
    process_cpu_s,
)

START_TIMEOUT_S = 120.0  # spawning and importing on a loaded machine
CALL_TIMEOUT_S = 60.0
# Slices go out this early; the worker sends at the scheduled time, so the
# pipe hop never shows as lateness.
ISSUE_AHEAD_NS = 5_000_000


def _one_line(exc: BaseException) -> str:
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return last.replace("\n", " ")[:300]


def _worker(
    ctrl: Connection,
    events: Connection,
    config: OpenAIConfig,
    prompts_pickle: bytes,
    key: str | None,
) -> None:
    # Ctrl-C reaches the whole process group: the parent stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        prompts = pickle.loads(prompts_pickle)
        agent = RemoteAgent(
            config, prompts, key, emit=lambda batch: events.send(("events", batch))
        )
    except BaseException as exc:  # reported to the parent, which ends the start
        ctrl.send(("error", _one_line(exc)))
        return
    ctrl.send(("ready", {**host_identity(), "ready_ns": time.perf_counter_ns()}))
    try:
        while True:
            message = ctrl.recv()
            op = message[0]
            if op == "submit":
                agent.submit(*message[1:])
            elif op == "now":
                ctrl.send(("ok", time.perf_counter_ns()))
            elif op == "report":
                ctrl.send(("ok", agent.report()))
            elif op == "cpu":
                ctrl.send(("ok", process_cpu_s()))
            elif op == "reset":
                agent.reset()
                ctrl.send(("ok", None))
            else:
                break
    except BaseException as exc:
        with contextlib.suppress(Exception):
            events.send(("error", _one_line(exc)))
        raise
    finally:
        agent.close()


class ProcessTransport:
    """``workers`` spawned processes, one ``RemoteAgent`` each."""

    kind = "worker"
    issue_ahead_ns = ISSUE_AHEAD_NS

    def __init__(
        self, config: OpenAIConfig, prompts: PromptSource, api_key: ApiKey | None
    ) -> None:
        self._config = config
        self._prompts = portable_prompts(prompts)
        # The key crosses the pipe to the child once; it is never logged.
        self._key = api_key.value if api_key is not None else None
        self._ctrl: list[Connection] = []
        self._events: list[Connection] = []
        self._procs: list[Any] = []
        self._locks: list[threading.Lock] = []
        self._gone: set[int] = set()

    def start(self) -> list[dict[str, Any]]:
        ctx = multiprocessing.get_context("spawn")
        try:
            for _ in range(self._config.workers):
                ctrl, child_ctrl = ctx.Pipe()
                events, child_events = ctx.Pipe(duplex=False)
                proc = ctx.Process(
                    target=_worker,
                    args=(
                        child_ctrl,
                        child_events,
                        self._config,
                        self._prompts,
                        self._key,
                    ),
                    daemon=True,
                )
                proc.start()
                child_ctrl.close()
                child_events.close()
                self._ctrl.append(ctrl)
                self._events.append(events)
                self._procs.append(proc)
                self._locks.append(threading.Lock())
            return [self._ready(i) for i in range(len(self._procs))]
        except BaseException:
            self.close()
            raise

    def _ready(self, i: int) -> dict[str, Any]:
        try:
            reply = self._reply(i, START_TIMEOUT_S)
        except ClientLost as lost:
            raise SUTError(f"worker {i} died during start-up: {lost.reason}") from None
        if reply[0] == "error":
            raise SUTError(f"worker {i} failed to start: {reply[1]}")
        identity: dict[str, Any] = reply[1]
        return identity

    def _reply(self, i: int, timeout_s: float) -> tuple[Any, ...]:
        """The next control message from worker ``i``, watching for its death."""
        conn, proc = self._ctrl[i], self._procs[i]
        ready = wait([conn, proc.sentinel], timeout_s)
        if conn in ready:
            with contextlib.suppress(EOFError, OSError):
                message: tuple[Any, ...] = conn.recv()
                return message
        if not ready:
            raise ClientLost(i, f"no answer within {timeout_s:g} s")
        proc.join(1)
        raise ClientLost(i, _exit_reason(proc.exitcode))

    def submit(
        self,
        client: int,
        ids: IdArray,
        indices: IdArray,
        scheduled_ns: IdArray,
        wants: np.ndarray[Any, Any],
        slots: int = 0,
    ) -> None:
        # A dead worker's pipe fails: the receiver reports it with its reason.
        message = ("submit", ids, indices, scheduled_ns, wants, slots)
        with self._locks[client], contextlib.suppress(OSError):
            self._ctrl[client].send(message)

    def call(self, client: int, op: str) -> Any:
        with self._locks[client]:
            try:
                self._ctrl[client].send((op,))
            except OSError:
                raise SUTError(f"worker {client} is gone") from None
            try:
                reply = self._reply(client, CALL_TIMEOUT_S)
            except ClientLost as lost:
                raise SUTError(f"worker {client} died: {lost.reason}") from None
        return reply[1]

    def receive(self, timeout_s: float) -> list[tuple[int, list[Event]]]:
        live = [i for i in range(len(self._procs)) if i not in self._gone]
        waitables: list[Any] = [self._events[i] for i in live]
        waitables += [self._procs[i].sentinel for i in live]
        ready = set(wait(waitables, timeout_s)) if live else set()
        if not live:
            time.sleep(timeout_s)
        out: list[tuple[int, list[Event]]] = []
        for i in live:
            conn = self._events[i]
            while conn in ready or conn.poll():
                ready.discard(conn)
                try:
                    message: tuple[Any, ...] = conn.recv()
                except (EOFError, OSError):
                    break
                if message[0] == "error":
                    self._gone.add(i)
                    raise ClientLost(i, message[1])
                out.append((i, message[1]))
            if self._procs[i].sentinel in ready and not out:
                self._gone.add(i)
                self._procs[i].join(1)
                raise ClientLost(i, _exit_reason(self._procs[i].exitcode))
        return out

    def close(self) -> None:
        for i, conn in enumerate(self._ctrl):
            with self._locks[i], contextlib.suppress(OSError):
                conn.send(("stop",))
        for proc in self._procs:
            proc.join(10)
            if proc.is_alive():
                proc.terminate()
                proc.join(5)
        self._gone.update(range(len(self._procs)))
        for conn in [*self._ctrl, *self._events]:
            conn.close()

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self._procs]


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        return f"killed by signal {-code}"
    return f"exited with code {code}"


class MultiProcessHttpSUT(RemoteClientSUT):
    """The HTTP SUT spread over ``config.workers`` processes (same interface)."""

    def __init__(
        self,
        config: OpenAIConfig,
        prompts: PromptSource,
        *,
        api_key: ApiKey | None = None,
        clock: Clock | None = None,
    ) -> None:
        config.validate()
        self.transport = ProcessTransport(config, prompts, api_key)
        super().__init__(self.transport, config, clock=clock)

    def __enter__(self) -> MultiProcessHttpSUT:
        return self
