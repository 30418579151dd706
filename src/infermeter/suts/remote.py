"""The HTTP SUT spread over remote clients: worker processes or Ray actors, one design.

``RemoteClientSUT`` is the coordinator. It starts every client through a
``Transport`` and waits until each reports ready (before the run's clock
starts), measures each client's clock offset with round-trip pings, and
hands each client its slice of every batch: sample ``id`` goes to client
``id % N``, so counts stay balanced in open and closed loop alike. Batches
go out ``issue_ahead_ns`` early with scheduled times in the client's clock;
the client sends at those times (``suts/remote_agent.py``) and streams back
stamped events, which the coordinator converts to its clock. A closed loop
runs on the receiver thread instead, each client keeping its share of the
slots (``suts/remote_loop.py``). A client that dies fails its outstanding
samples and ends the phase at once with its error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from infermeter.clock import Clock, MonotonicClock
from infermeter.errors import ConfigError, SUTError
from infermeter.loadgen.closed_loop import ClosedLoopFeed
from infermeter.loadgen.interfaces import CompletionSink, IdArray, QueryBatch
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.remote_agent import Event, host_identity
from infermeter.suts.remote_clock import ClockSync, measure_offset
from infermeter.suts.remote_loop import QUEUE_FRACTION, SlotShares


class ClientLost(Exception):
    """A remote client died or stopped answering; ``reason`` says why."""

    def __init__(self, client: int, reason: str) -> None:
        super().__init__(reason)
        self.client = client
        self.reason = reason


class Transport(Protocol):
    """How the coordinator reaches its clients (processes, Ray actors)."""

    kind: str  # "worker" or "actor", as messages name one client
    issue_ahead_ns: int  # how early a client needs its slice

    def start(self) -> list[dict[str, Any]]:
        """Start every client and wait until each is ready; identity per client.

        Raises ``SUTError`` naming the client and its error when one fails.
        """
        ...

    def submit(
        self,
        client: int,
        ids: IdArray,
        indices: IdArray,
        scheduled_ns: IdArray,
        wants: np.ndarray[Any, Any],
        slots: int = 0,
    ) -> None:
        """Hand ``client`` samples to send at ``scheduled_ns`` (its own clock), or,
        with ``slots`` > 0, each as soon as one of its ``slots`` frees."""
        ...

    def call(self, client: int, op: str) -> Any:
        """A round trip: ``now`` (its clock), ``report``, ``cpu`` or ``reset``."""
        ...

    def receive(self, timeout_s: float) -> list[tuple[int, list[Event]]]:
        """Event batches that arrived, per client; raises ``ClientLost``."""
        ...

    def close(self) -> None:
        """Stop every client (those alive) and release the transport."""
        ...


@dataclass(slots=True)
class _Client:
    identity: dict[str, Any]
    sync: ClockSync
    outstanding: set[int] = field(default_factory=set)
    final: dict[str, Any] | None = None  # the agent's last report
    lost: str | None = None


class RemoteReachability:
    """What the run's guard hooks on: any client's endpoint gone unreachable."""

    def __init__(self) -> None:
        self.on_unreachable: Callable[[str], None] | None = None


class RemoteClientSUT:
    """The HTTP SUT over ``transport``'s clients (same interface as the one-process SUT)."""

    name = "openai"
    # Run the engine's closed loop on the receiver thread, clients holding their
    # share of the slots; False: the engine's thread (side-by-side measurements).
    runs_closed_loop = True

    def __init__(
        self,
        transport: Transport,
        config: OpenAIConfig,
        *,
        clock: Clock | None = None,
    ) -> None:
        if clock is not None and not isinstance(clock, MonotonicClock):
            raise ConfigError(
                "Remote clients (--workers > 1, --ray) need the real clock, "
                "not a virtual one"
            )
        self._transport = transport
        self.config = config
        self.reachability = RemoteReachability()
        self.issue_ahead_ns = transport.issue_ahead_ns
        identities = transport.start()  # before the run's clock: start-up is untimed
        local = _local_boot_id()
        try:
            self._clients = [
                _Client(identity, self._sync(i, identity, local))
                for i, identity in enumerate(identities)
            ]
        except BaseException:
            transport.close()
            raise
        self.workers = len(self._clients)
        self._sink: CompletionSink | None = None
        self._lock = threading.Lock()
        self._dead: str | None = None
        self._closed = False
        self._feed: ClosedLoopFeed | None = None
        self._shares: SlotShares | None = None
        self._thread = threading.Thread(
            target=self._receive, name="infermeter-remote", daemon=True
        )
        self._thread.start()

    def _sync(self, i: int, identity: dict[str, Any], local_boot: str) -> ClockSync:
        offset, uncertainty = measure_offset(
            lambda: int(self._transport.call(i, "now"))
        )
        # The same kernel means the same CLOCK_MONOTONIC: the pings only confirm it.
        shared = bool(local_boot) and identity.get("boot_id") == local_boot
        if shared and abs(offset) > uncertainty:
            shared = False
        return ClockSync(0 if shared else offset, uncertainty, shared)

    @property
    def streams(self) -> bool:
        """False when answers come whole: then no first-token time is measured."""
        return self.config.stream

    def params(self) -> dict[str, Any]:
        """The effective request settings, for run.json (no secret)."""
        return self.config.params()

    # -- SystemUnderTest -------------------------------------------------
    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self._sink = sink
        self._feed = None  # an open loop (or the engine's closed loop) now
        if self._dead is not None:  # a client is gone: this phase ends with its error
            sink.fail(batch.ids, self._dead)
            abort = getattr(sink, "abort", None)
            if not callable(abort):
                raise SUTError(self._dead)
            abort(self._dead)
            return
        wants = sink.wants_data(batch.ids)
        n = len(self._clients)
        owner = batch.ids % n
        for i, client in enumerate(self._clients):
            part = np.nonzero(owner == i)[0] if n > 1 else slice(None)
            ids = batch.ids[part]
            if not ids.shape[0]:
                continue
            with self._lock:
                client.outstanding.update(ids.tolist())
            self._transport.submit(
                i,
                ids,
                batch.sample_indices[part],
                batch.scheduled_ns[part] - client.sync.offset_ns,
                wants[part],
            )

    def flush_queries(self) -> None:
        """Nothing is held back."""

    # -- ClosedLoopSUT: the loop on the receiver thread ---------------------
    def drive_closed_loop(self, feed: ClosedLoopFeed) -> bool:
        """Draw the next queries as completions arrive; clients keep their slots."""
        if not self.runs_closed_loop or self._dead is not None:
            return False
        self._sink = feed.sink
        fraction = getattr(self._transport, "queue_fraction", QUEUE_FRACTION)
        self._shares = SlotShares.of(feed, len(self._clients), fraction)
        self._feed = feed
        self._pump(feed)
        return True

    def _pump(self, feed: ClosedLoopFeed) -> None:
        assert self._shares is not None
        extra = self._shares.extra_samples // feed.samples_per_query
        feed.pump(self._send_fed, extra)

    def _send_fed(self, batch: QueryBatch) -> None:
        """Hand each sample to the client with the most room (its slots + queue)."""
        shares, sink = self._shares, self._sink
        assert shares is not None and sink is not None
        wants = sink.wants_data(batch.ids)
        with self._lock:
            owner = shares.route(
                len(batch), [len(c.outstanding) for c in self._clients]
            )
            for i, client in enumerate(self._clients):
                client.outstanding.update(batch.ids[owner == i].tolist())
        for i in np.unique(owner).tolist():
            part = np.nonzero(owner == i)[0]
            self._transport.submit(
                i,
                batch.ids[part],
                batch.sample_indices[part],
                batch.scheduled_ns[part] - self._clients[i].sync.offset_ns,
                wants[part],
                slots=shares.slots[i],
            )

    # -- receiving -------------------------------------------------------
    def _receive(self) -> None:
        while not self._closed:
            try:
                arrived = self._transport.receive(0.2)
            except ClientLost as lost:
                self._lose(lost)
                continue
            except Exception as exc:  # the transport itself broke
                if not self._closed:
                    self._lose(ClientLost(-1, f"{type(exc).__name__}: {exc}"))
                return
            for client, events in arrived:
                self._dispatch(self._clients[client], events)
            feed = self._feed
            if arrived and feed is not None:
                self._pump(feed)  # the closed loop's next queries, no engine hop

    def _lose(self, lost: ClientLost) -> None:
        if self._closed:
            return
        who = f"{self._transport.kind} {lost.client}" if lost.client >= 0 else "client"
        reason = f"remote client lost: {who} died: {lost.reason}"[:300]
        self._dead = reason
        victims = range(len(self._clients)) if lost.client < 0 else [lost.client]
        sink = self._sink
        for k in victims:
            client = self._clients[k]
            client.lost = lost.reason
            with self._lock:
                ids, client.outstanding = sorted(client.outstanding), set()
            if sink is not None and ids:
                sink.fail(np.asarray(ids, dtype=np.int64), reason)
        abort = getattr(sink, "abort", None)
        if callable(abort):
            abort(reason)

    def _dispatch(self, client: _Client, events: list[Event]) -> None:
        sink = self._sink
        if sink is None:
            return
        offset = client.sync.offset_ns
        self._mark_issued(sink, [e for e in events if e[0] == "i"], offset)
        firsts = [e for e in events if e[0] == "f"]
        if firsts:
            ids = np.array([e[1] for e in firsts], dtype=np.int64)
            at = np.array([e[2] for e in firsts], dtype=np.int64) + offset
            sink.first_token(ids, at_ns=at)
        finished: list[int] = []
        done = [e for e in events if e[0] == "c" and e[4] is None and e[3] is not None]
        if done:  # the usual completion (no accuracy data): one sink call for all
            ids = np.array([e[1] for e in done], dtype=np.int64)
            sink.complete(
                ids,
                n_tokens=np.array([e[3] for e in done], dtype=np.int64),
                at_ns=np.array([e[2] for e in done], dtype=np.int64) + offset,
            )
            finished += ids.tolist()
        for event in events:
            kind = event[0]
            if kind == "c" and (event[4] is not None or event[3] is None):
                data = None if event[4] is None else [event[4]]
                sink.complete(
                    np.array([event[1]], dtype=np.int64),
                    n_tokens=event[3],
                    data=data,
                    at_ns=int(event[2]) + offset,
                )
                finished.append(event[1])
            elif kind == "x":
                sink.fail(np.array([event[1]], dtype=np.int64), event[3])
                finished.append(event[1])
            elif kind == "u" and self.reachability.on_unreachable is not None:
                self.reachability.on_unreachable(event[1])
        if finished:
            with self._lock:
                client.outstanding.difference_update(finished)

    def _mark_issued(
        self, sink: CompletionSink, marks: list[Event], offset: int
    ) -> None:
        """Real send times, before the batch's completions: a row written as it
        completes (the records journal) already carries its send."""
        mark = getattr(self._feed or sink, "mark_issued", None)
        if callable(mark):
            for event in marks:
                mark(event[1], int(event[2]) + offset)

    # -- results ---------------------------------------------------------
    def _reports(self) -> list[dict[str, Any]]:
        out = []
        for i, client in enumerate(self._clients):
            if client.final is not None:
                out.append(client.final)
            elif client.lost is None and not self._closed:
                out.append(self._transport.call(i, "report"))
            else:
                out.append({})
        return out

    def send_times(self) -> tuple[IdArray, IdArray]:
        """(ids, coordinator-clock ns) each request left its client."""
        ids, sent = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for part, client in zip(self._reports(), self._clients, strict=True):
            if "ids" in part:
                ids.append(np.asarray(part["ids"], dtype=np.int64))
                sent.append(
                    np.asarray(part["sent"], dtype=np.int64) + client.sync.offset_ns
                )
        return np.concatenate(ids), np.concatenate(sent)

    def routes(self) -> tuple[IdArray, IdArray] | None:
        """(ids, replica index) of every routed request; None for one endpoint."""
        parts = [p["routes"] for p in self._reports() if p.get("routes") is not None]
        if not parts:
            return None
        return (
            np.concatenate([np.asarray(r[0], dtype=np.int64) for r in parts]),
            np.concatenate([np.asarray(r[1], dtype=np.int64) for r in parts]),
        )

    def stats(self) -> dict[str, Any]:
        """Summed counters, and per client: counts, where it ran and its clock offset."""
        parts = [p.get("stats", {}) for p in self._reports()]
        total = merge_stats(parts)
        total["workers"] = len(self._clients)
        total["transport"] = self._transport.kind
        total["clients"] = [
            {
                **{k: part.get(k) for k in ("requests", "completed", "failed")},
                "host": client.identity.get("host"),
                "pid": client.identity.get("pid"),
                "clock": client.sync.as_dict(),
                "lost": client.lost,
            }
            for part, client in zip(parts, self._clients, strict=True)
        ]
        return total

    @property
    def identities(self) -> list[dict[str, Any]]:
        """Where each client runs (host, pid, boot id) and when it was ready (its clock)."""
        return [dict(c.identity) for c in self._clients]

    def clock_error_bound_ns(self) -> int:
        """The largest error bound of any client's corrected stamps (measuring the
        end offsets now, for a sweep point, unless the SUT closed and kept them)."""
        if not self._closed:
            for i, client in enumerate(self._clients):
                if client.lost is None:
                    self._end_sync(i, client)
        return max((c.sync.error_bound_ns for c in self._clients), default=0)

    def client_cpu_s(self) -> float:
        """CPU seconds the clients have used so far (all of them, wherever they run)."""
        total = 0.0
        for i, client in enumerate(self._clients):
            if client.final is not None:
                total += float(client.final.get("cpu_s", 0.0))
            elif client.lost is None and not self._closed:
                total += float(self._transport.call(i, "cpu"))
        return total

    def reset_records(self) -> None:
        for i in range(len(self._clients)):
            self._transport.call(i, "reset")

    def close(self) -> None:
        """Keep each client's final report and clock, then stop them all."""
        if self._closed:
            return
        try:
            for i, client in enumerate(self._clients):
                if client.lost is None:
                    client.final = self._transport.call(i, "report")
                    self._end_sync(i, client)
        except (SUTError, ClientLost):
            pass
        finally:
            self._closed = True
            self._transport.close()
            self._thread.join(5)

    def _end_sync(self, i: int, client: _Client) -> None:
        offset, uncertainty = measure_offset(
            lambda: int(self._transport.call(i, "now"))
        )
        client.sync.end_offset_ns = 0 if client.sync.shared else offset
        client.sync.end_uncertainty_ns = uncertainty

    def __enter__(self) -> RemoteClientSUT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def merge_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Counters of several clients as one: numbers add up, nested dicts merge."""
    total: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, bool) or not isinstance(value, int | float | dict):
                total.setdefault(key, value)
            elif isinstance(value, dict):
                total[key] = merge_stats([total.get(key) or {}, value])
            else:
                total[key] = total.get(key, 0) + value
    return total


def _local_boot_id() -> str:
    return str(host_identity()["boot_id"])
