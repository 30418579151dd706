"""Ray actors as remote clients: the Ray transport of ``suts/remote.py``.

``pip install 'infermeter[ray]'``. Each actor (one CPU, spread over the
cluster's nodes) runs a ``RemoteAgent``: it receives its slice of the
schedule about 100 ms ahead, sends each request at its scheduled time in the
coordinator's time base (corrected by the measured clock offset), and hands
its events back through a long poll, in batches. Slices are buffered and sent
every few milliseconds, so a 2,000 QPS run costs a few hundred Ray calls a
second, not thousands. An actor that dies surfaces as a failed poll.

Addresses: ``local`` starts a private cluster bound to 127.0.0.1 (no
dashboard); ``auto`` joins the cluster ``ray start`` runs on this machine;
anything else (``HOST:6379``, ``ray://HOST:10001``) is passed to ``ray.init``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import re
import sys
import threading
import time
from typing import Any

import numpy as np

from infermeter.clock import Clock
from infermeter.errors import ConfigError, SUTError
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

ISSUE_AHEAD_NS = 100_000_000  # Ray calls take ~1 ms, more on a loaded node
FLUSH_S = 0.01  # slices are gathered this long before one call per actor
POLL_S = 0.05
START_TIMEOUT_S = 180.0
CALL_TIMEOUT_S = 60.0
LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024
INSTALL = "pip install 'infermeter[ray]'"


# Read by Ray when it is imported: "0" makes it take 127.0.0.1 as this node's IP, so a
# private local cluster binds and talks on loopback only (else: the machine's own IP).
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def import_ray(*, loopback: bool = False) -> Any:
    if loopback and "ray" not in sys.modules:
        os.environ.setdefault(LOOPBACK_ENV, "0")
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--ray needs Ray; install the extra: {INSTALL}") from None
    return ray


class AgentActor:
    """The body of one Ray actor: a ``RemoteAgent`` and a buffer of its events."""

    def __init__(self, config: OpenAIConfig, prompts: bytes, key: str | None) -> None:
        self._events: list[Event] = []
        self._cond = threading.Condition()
        self._agent = RemoteAgent(config, pickle.loads(prompts), key, emit=self._emit)

    def _emit(self, events: list[Event]) -> None:
        with self._cond:
            self._events.extend(events)
            self._cond.notify_all()

    def ready(self) -> dict[str, Any]:
        return {**host_identity(), "ready_ns": time.perf_counter_ns()}

    def submit(self, parts: list[tuple[Any, ...]]) -> None:
        for ids, indices, scheduled, wants, slots in parts:
            self._agent.submit(ids, indices, scheduled, wants, slots)

    def poll(self, timeout_s: float) -> list[Event]:
        with self._cond:
            if not self._events:
                self._cond.wait(timeout_s)
            events, self._events = self._events, []
        return events

    def now(self) -> int:
        return time.perf_counter_ns()

    def report(self) -> dict[str, Any]:
        return self._agent.report()

    def cpu(self) -> float:
        return process_cpu_s()

    def reset(self) -> None:
        self._agent.reset()

    def shutdown(self) -> None:
        self._agent.close()


def start_ray(address: str, *, actors: int = 0) -> bool:
    """Connect to (or start) the cluster; True when this call started Ray.

    A local cluster gets at least one logical CPU per actor (they may share cores).
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if address == "local":
        ray.init(
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE_BYTES,
            num_cpus=max(os.cpu_count() or 1, actors),
            **quiet,
        )
    else:
        ray.init(address=address, **quiet)
    return True


class RayTransport:
    """``actors`` Ray actors, one CPU each, spread over the cluster's nodes."""

    kind = "actor"
    issue_ahead_ns = ISSUE_AHEAD_NS
    # A closed loop's actors each hold half their slots again queued: a Ray round
    # trip (a poll, a call) takes milliseconds, a pipe's well under one.
    queue_fraction = 0.5

    def __init__(
        self,
        config: OpenAIConfig,
        prompts: PromptSource,
        api_key: ApiKey | None,
        *,
        address: str,
        actors: int,
    ) -> None:
        if actors < 0:
            raise ConfigError(f"--ray-actors must be >= 1 (got {actors})")
        self._ray = import_ray(loopback=address == "local")
        self._config = config
        self._address = address
        self._count = actors
        self._prompts = portable_prompts(prompts)
        self._key = api_key.value if api_key is not None else None
        self._actors: list[Any] = []
        self._polls: dict[Any, int] = {}
        self._pending: list[list[tuple[Any, ...]]] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._started_ray = False
        self._flusher: threading.Thread | None = None

    def start(self) -> list[dict[str, Any]]:
        ray = self._ray
        try:
            self._started_ray = start_ray(self._address, actors=self._count)
        except Exception as exc:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            raise SUTError(
                f"cannot reach the Ray cluster {self._address!r} "
                f"({lines[0].rstrip('.')}); start one with `ray start --head`, "
                "or give --ray alone for a private local cluster"
            ) from None
        if self._count == 0:  # one per node
            self._count = max(1, sum(1 for n in ray.nodes() if n.get("Alive")))
        remote = ray.remote(num_cpus=1, max_concurrency=4, max_restarts=0)(AgentActor)
        prompts = ray.put(self._prompts)
        # Cluster env: the agents import infermeter, so every node needs it installed.
        self._actors = [
            remote.options(scheduling_strategy="SPREAD").remote(
                self._config, prompts, self._key
            )
            for _ in range(self._count)
        ]
        self._pending = [[] for _ in self._actors]
        identities: list[dict[str, Any]] = []
        for i, actor in enumerate(self._actors):
            try:
                identities.append(
                    ray.get(actor.ready.remote(), timeout=START_TIMEOUT_S)
                )
            except Exception as exc:
                self.close()
                raise SUTError(
                    f"Ray actor {i} failed to start: {_short(exc)}"
                ) from None
        self._polls = {a.poll.remote(POLL_S): i for i, a in enumerate(self._actors)}
        self._flusher = threading.Thread(
            target=self._flush_loop, name="infermeter-ray-submit", daemon=True
        )
        self._flusher.start()
        return identities

    def submit(
        self,
        client: int,
        ids: IdArray,
        indices: IdArray,
        scheduled_ns: IdArray,
        wants: np.ndarray[Any, Any],
        slots: int = 0,
    ) -> None:
        with self._lock:
            self._pending[client].append((ids, indices, scheduled_ns, wants, slots))
        # Due (or nearly): go now. Slices far ahead wait for the next flush.
        if int(scheduled_ns.min()) - time.perf_counter_ns() < ISSUE_AHEAD_NS // 2:
            self._wake.set()

    def _flush_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(FLUSH_S)
            self._wake.clear()
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            batches = [(i, p) for i, p in enumerate(self._pending) if p]
            self._pending = [[] for _ in self._actors]
        for i, parts in batches:
            self._actors[i].submit.remote(parts)

    def call(self, client: int, op: str) -> Any:
        try:
            method = getattr(self._actors[client], op)
            return self._ray.get(method.remote(), timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            raise SUTError(
                f"Ray actor {client} did not answer {op}: {_short(exc)}"
            ) from None

    def receive(self, timeout_s: float) -> list[tuple[int, list[Event]]]:
        ray = self._ray
        if not self._polls:
            time.sleep(timeout_s)
            return []
        ready, _ = ray.wait(
            list(self._polls), num_returns=len(self._polls), timeout=timeout_s
        )
        out: list[tuple[int, list[Event]]] = []
        for ref in ready:
            i = self._polls.pop(ref)
            try:
                events = ray.get(ref)
            except Exception as exc:
                raise ClientLost(i, _short(exc)) from None
            self._polls[self._actors[i].poll.remote(POLL_S)] = i
            if events:
                out.append((i, events))
        return out

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._flusher is not None:
            self._flusher.join(5)
        ray = self._ray
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.get(actor.shutdown.remote(), timeout=10)
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._polls = {}
        if self._started_ray:
            with contextlib.suppress(Exception):
                ray.shutdown()


_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*?:")


def _short(exc: BaseException) -> str:
    """One line of a (often long) Ray error: the error raised in the actor, if any."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    raised = [line for line in lines[1:] if _RAISED.match(line)]
    detail = raised[-1] if raised else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {detail}"[:300]


class RayHttpSUT(RemoteClientSUT):
    """The HTTP SUT over ``actors`` Ray actors (same interface as the one-process SUT)."""

    scale_advice = "add Ray actors (--ray-actors N) or nodes"

    def __init__(
        self,
        config: OpenAIConfig,
        prompts: PromptSource,
        *,
        address: str,
        actors: int,
        api_key: ApiKey | None = None,
        clock: Clock | None = None,
    ) -> None:
        config.validate()
        self.transport = RayTransport(
            config, prompts, api_key, address=address, actors=actors
        )
        super().__init__(self.transport, config, clock=clock)

    def __enter__(self) -> RayHttpSUT:
        return self
