"""The closed loop run by the HTTP client itself, against a real mock on 127.0.0.1.

In this process (the event loop draws the engine's feed) and in a remote
client's agent (its slice of the slots, queued samples sent as a slot
frees): counts, orders and bounds on what is in flight, never rates.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.faults import FaultConfig
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts
from infermeter.suts.remote_agent import RemoteAgent

pytestmark = [pytest.mark.integration]


def peak_in_flight(issued: np.ndarray, completed: np.ndarray) -> int:
    """The most samples between their issue and completion at one time."""
    ends = np.concatenate([np.stack([issued, np.ones_like(issued)], 1),
                           np.stack([completed, -np.ones_like(completed)], 1)])  # fmt: skip
    order = np.lexsort((ends[:, 1], ends[:, 0]))  # ends before starts at one time
    return int(np.cumsum(ends[order, 1]).max())


@pytest.mark.parametrize("drive", [True, False])
def test_a_fixed_concurrency_point_keeps_k_in_flight_with_either_loop(
    drive: bool,
) -> None:
    faults = FaultConfig(error_rate=0.1)
    cfg = MockConfig(
        mode="faults", ttft="const:0.002", itl="const:0.0005", faults=faults
    )
    with MockProcess(cfg) as url:
        prompts = SyntheticPrompts(32, input_tokens=8, output_tokens=4)
        with OpenAIHttpSUT(OpenAIConfig(url=url, model="m"), prompts) as sut:
            sut.runs_closed_loop = drive
            result = run_load(
                sut, LoadSpec(concurrency=6, requests=300), sample_count=32
            )
            ids, sent = sut.send_times()
    phase, m = result.phase, result.metrics
    assert phase.samples_issued == 300 and m.completed + m.failed == 300
    assert m.failed > 0  # failures free their slot too
    rec = phase.records
    assert peak_in_flight(rec.issued_ns[:300], rec.completed_ns[:300]) == 6
    # Each request left after its issue, in the engine's order.
    assert sorted(ids.tolist()) == list(range(300))
    assert np.all(sent >= rec.issued_ns[ids])


def test_a_remote_agent_sends_queued_samples_only_as_its_slots_free() -> None:
    cfg = MockConfig(mode="timed", ttft="const:0.002", itl="const:0.0005")
    events: list[Any] = []
    lock = threading.Lock()

    def emit(batch: list[Any]) -> None:
        with lock:
            events.extend(batch)

    with MockProcess(cfg) as url:
        prompts = SyntheticPrompts(16, input_tokens=8, output_tokens=4)
        agent = RemoteAgent(OpenAIConfig(url=url, model="m"), prompts, None, emit)
        try:
            ids = np.arange(40, dtype=np.int64)
            now = np.full(40, time.perf_counter_ns(), dtype=np.int64)
            agent.submit(ids, ids % 16, now, np.zeros(40, dtype=np.bool_), 3)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with lock:
                    if sum(e[0] in "cx" for e in events) == 40:
                        break
                time.sleep(0.05)
        finally:
            agent.close()
    running, peak, order = 0, 0, []
    for event in events:
        if event[0] == "i":
            running += len(event[1])
            order += event[1].tolist()
        elif event[0] in "cx":
            running -= 1
        peak = max(peak, running)
    assert sum(e[0] == "c" for e in events) == 40
    assert peak == 3 and order == list(range(40))  # FIFO, three at a time
