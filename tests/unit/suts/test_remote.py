"""The remote-client coordinator over an in-memory transport: slicing, clocks, deaths."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.loadgen.engine import run_phase
from infermeter.loadgen.schedule import Schedule
from infermeter.loadgen.settings import RunSettings, Scenario, effective_settings
from infermeter.runs.selfcert import CpuMeter, certify
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.remote import ClientLost, RemoteClientSUT, merge_stats
from infermeter.suts.remote_clock import ClockSync, measure_offset
from infermeter.testing import ManualClock

MS = 1_000_000
CONFIG = OpenAIConfig(url="http://127.0.0.1:9/v1", model="m")


class EchoTransport:
    """Clients that answer each sample 1 ms after its scheduled time, in their own clock.

    Client ``i``'s clock runs ``skews[i]`` ns behind the coordinator's.
    """

    kind = "worker"
    issue_ahead_ns = 2 * MS

    def __init__(self, skews: list[int], *, boot_id: str = "other") -> None:
        self.skews = skews
        self.boot_id = boot_id
        self.events: queue.Queue[tuple[int, list[Any]]] = queue.Queue()
        self.submitted: list[list[int]] = [[] for _ in skews]
        self.scheduled: dict[int, int] = {}
        self.lost: ClientLost | None = None
        self.cpu = [0.0 for _ in skews]
        self.closed = False

    def start(self) -> list[dict[str, Any]]:
        return [
            {"host": "h", "pid": i, "boot_id": self.boot_id}
            for i in range(len(self.skews))
        ]

    def submit(
        self, client: int, ids: Any, indices: Any, scheduled: Any, wants: Any
    ) -> None:
        self.submitted[client] += ids.tolist()
        events: list[Any] = []
        for i, t in zip(ids.tolist(), scheduled.tolist(), strict=True):
            self.scheduled[i] = t
            events.append(("i", np.array([i]), t))
            events.append(("c", i, t + MS, 3, None))
        self.events.put((client, events))

    def call(self, client: int, op: str) -> Any:
        if op == "now":
            return time.perf_counter_ns() - self.skews[client]
        if op == "cpu":
            self.cpu[client] += 0.5
            return self.cpu[client]
        if op == "report":
            n = len(self.submitted[client])
            stats = {"requests": n, "completed": n, "failed": 0, "failure_reasons": {}}
            return {"ids": [], "sent": [], "stats": stats, "cpu_s": 1.0, "routes": None}
        return None

    def receive(self, timeout_s: float) -> list[tuple[int, list[Any]]]:
        if self.lost is not None:
            lost, self.lost = self.lost, None
            raise lost
        try:
            return [self.events.get(timeout=timeout_s)]
        except queue.Empty:
            return []

    def close(self) -> None:
        self.closed = True


def _phase(sut: RemoteClientSUT, times_ms: list[float]) -> Any:
    times = (np.asarray(times_ms) * MS).astype(np.int64)
    schedule = Schedule(
        scheduled_ns=times,
        sample_indices=np.arange(len(times), dtype=np.int64) % 8,
        samples_per_query=1,
        query_offsets=None,
        generated_duration_ns=int(times[-1]),
    )
    requested = RunSettings(
        scenario=Scenario.SERVER, min_duration_ms=0, min_query_count=1,
        completion_timeout_ns=20_000 * MS,
    )  # fmt: skip
    settings = effective_settings(requested, qsl_total_count=8, qsl_performance_count=8)
    from infermeter.clock import MonotonicClock

    return run_phase(sut, schedule, settings, MonotonicClock())


def test_samples_go_to_client_id_mod_n_and_stamps_come_back_in_one_time_base() -> None:
    skew = 7_000 * MS  # client 1's clock is 7 s behind
    transport = EchoTransport([0, skew])
    with RemoteClientSUT(transport, CONFIG) as sut:
        phase = _phase(sut, [i * 0.5 for i in range(40)])
        stats = sut.stats()
    assert transport.submitted == [list(range(0, 40, 2)), list(range(1, 40, 2))]
    assert [c["requests"] for c in stats["clients"]] == [20, 20]
    # The slices carried the times in each client's clock...
    origin = phase.query_origin_ns
    for i, t in transport.scheduled.items():
        assert abs(t - (int(origin[i]) - transport.skews[i % 2])) < 2 * MS
    # ...and came back in the coordinator's: issue = scheduled, completion 1 ms later,
    # give or take the measured offset's uncertainty.
    rec = phase.records
    for sync in (c["clock"] for c in stats["clients"]):
        assert sync["shared_clock"] is False and sync["uncertainty_ns"] < 50 * MS
    late = rec.issued_ns[:40] - origin[:40]
    assert np.abs(late).max() < 50 * MS
    assert np.abs(rec.completed_ns[:40] - origin[:40] - MS).max() < 50 * MS
    assert phase.samples_issued == 40 and not phase.errors


def test_a_lost_client_fails_its_samples_and_ends_the_phase_with_its_error() -> None:
    transport = EchoTransport([0, 0])

    transport.submit = lambda client, ids, *a: (  # type: ignore[method-assign]
        transport.submitted[client].extend(ids.tolist())
    )  # nothing ever completes
    with RemoteClientSUT(transport, CONFIG) as sut:
        threading.Timer(
            0.3, lambda: setattr(transport, "lost", ClientLost(1, "killed by signal 9"))
        ).start()
        started = time.monotonic()
        phase = _phase(sut, [i * 10.0 for i in range(2000)])  # 20 s of arrivals
        took = time.monotonic() - started
    reason = "remote client lost: worker 1 died: killed by signal 9"
    assert reason in phase.errors
    assert took < 10.0 and phase.samples_issued < 2000
    failed = phase.records.status[: phase.samples_issued] != 0
    ids = np.nonzero(failed)[0]
    # Until the loss only the dead client's (odd) samples fail; a batch the load
    # generator issues after it (on a busy machine, before the abort lands) fails
    # whole, and nothing after it is served.
    even = ids[ids % 2 == 0]
    cut = int(even.min()) if even.size else phase.samples_issued
    assert ids.size and (ids[ids < cut] % 2 == 1).all() and ids[0] < cut
    assert failed[cut:].all()
    assert phase.records.status_reasons == [reason]


def test_clients_on_the_same_kernel_need_no_correction() -> None:
    from infermeter.suts.remote_agent import host_identity

    boot = str(host_identity()["boot_id"])
    with RemoteClientSUT(EchoTransport([0, 0], boot_id=boot), CONFIG) as sut:
        assert sut.clock_error_bound_ns() == 0
        clocks = [c["clock"] for c in sut.stats()["clients"]]
    assert all(c["shared_clock"] and c["offset_ns"] == 0 for c in clocks)


def test_measure_offset_brackets_the_true_offset() -> None:
    offset, uncertainty = measure_offset(lambda: time.perf_counter_ns() - 123 * MS)
    assert abs(offset - 123 * MS) <= uncertainty


def test_clock_error_bound_adds_the_drift_and_fails_self_certification() -> None:
    sync = ClockSync(offset_ns=5 * MS, uncertainty_ns=300_000)
    sync.end_offset_ns, sync.end_uncertainty_ns = 7 * MS, 400_000
    assert sync.error_bound_ns == 400_000 + 2 * MS
    times = np.arange(10, dtype=np.int64)
    cert = certify(
        scheduled_ns=times, issued_ns=times, sent_ns=None, cpu_s=0.0, wall_s=1.0,
        clock_error_ns=sync.error_bound_ns,
    )  # fmt: skip
    assert cert.client_bound
    assert "clock offset uncertain by 2.400 ms > 1 ms" in cert.reasons[0]


def test_cpu_meter_adds_the_client_processes_cpu() -> None:
    used = iter([10.0, 12.5])
    with CpuMeter(lambda: next(used)) as meter:
        pass
    assert meter.client_processes_cpu_s == 2.5
    assert meter.cpu_s >= 2.5


def test_merge_stats_adds_counters_and_merges_reasons() -> None:
    merged = merge_stats(
        [
            {
                "requests": 3,
                "failure_reasons": {"a": 1},
                "source": "usage",
            },
            {"requests": 4, "failure_reasons": {"a": 2, "b": 1}, "source": "usage"},
        ]
    )
    assert merged == {
        "requests": 7,
        "failure_reasons": {"a": 3, "b": 1},
        "source": "usage",
    }


def test_remote_clients_refuse_a_virtual_clock() -> None:
    with pytest.raises(ConfigError, match="real clock"):
        RemoteClientSUT(EchoTransport([0]), CONFIG, clock=ManualClock())  # type: ignore[arg-type]


def test_a_phase_after_a_client_was_lost_ends_at_once_instead_of_raising() -> None:
    transport = EchoTransport([0, 0])
    with RemoteClientSUT(transport, CONFIG) as sut:
        transport.lost = ClientLost(0, "exited with code 1")
        deadline = time.monotonic() + 10
        while sut.stats()["clients"][0]["lost"] is None and time.monotonic() < deadline:
            time.sleep(0.05)
        phase = _phase(sut, [i * 10.0 for i in range(500)])
    reason = "remote client lost: worker 0 died: exited with code 1"
    assert reason in phase.errors
    n = phase.samples_issued
    assert 0 < n < 500 and (phase.records.status[:n] != 0).all()
