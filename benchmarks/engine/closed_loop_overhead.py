"""What does the engine's closed loop cost per request, on its issue thread and on the SUT's?

A null SUT that answers every sample at once, so the figure is the engine's
own: stamping the issue, the sink's completion, and either the issue
thread's wait and wake (``engine``: a thread hop each way per query, the path
before issue #38) or the feed drawn on the SUT's thread (``sut``: what the
HTTP client's event loop runs per request, ``loadgen/closed_loop.py``).
Reports CPU microseconds per request (all threads), best of ``--repeats``,
the two loops interleaved, at each ``--concurrency``.

    python benchmarks/engine/closed_loop_overhead.py --requests 100000 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import deque

import numpy as np

from infermeter.clock import MonotonicClock
from infermeter.loadgen.closed_loop import ClosedLoopFeed
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.runs.load import LoadSpec, run_load


class NullSUT:
    """Answers at once: on the issue thread's hand-over, or in its own loop thread."""

    name = "null"

    def __init__(self, drive: bool) -> None:
        self.drive = drive
        self.pending: deque[tuple[QueryBatch, CompletionSink]] = deque()
        self.wake = threading.Event()
        self.feed: ClosedLoopFeed | None = None
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        # Another thread answers, as an HTTP client's event loop would.
        self.pending.append((batch, sink))
        self.wake.set()

    def flush_queries(self) -> None:
        """Nothing held."""

    def drive_closed_loop(self, feed: ClosedLoopFeed) -> bool:
        if not self.drive:
            return False
        self.feed = feed
        self.wake.set()
        return True

    def _loop(self) -> None:
        while not self.stop:
            self.wake.wait(0.1)
            self.wake.clear()
            feed = self.feed
            if feed is not None:
                self.feed = None
                self._drive(feed)
            while self.pending:
                batch, sink = self.pending.popleft()
                for k in range(len(batch)):  # one completion per call, as HTTP answers
                    sink.complete(batch.ids[k : k + 1], n_tokens=1)

    def _drive(self, feed: ClosedLoopFeed) -> None:
        running: deque[np.ndarray] = deque()

        def launch(batch: QueryBatch) -> None:
            running.extend(batch.ids[k : k + 1] for k in range(len(batch)))

        feed.pump(launch)
        while running:
            feed.sink.complete(running.popleft(), n_tokens=1)
            feed.pump(launch)


def cpu_us_per_request(loop: str, concurrency: int, requests: int) -> float:
    sut = NullSUT(drive=loop == "sut")
    try:
        spec = LoadSpec(concurrency=concurrency, requests=requests)
        t0 = time.process_time()
        result = run_load(sut, spec, sample_count=1024, clock=MonotonicClock())
        cpu = time.process_time() - t0
    finally:
        sut.stop = True
        sut.wake.set()
        sut.thread.join()
    assert result.metrics.completed == requests
    return 1e6 * cpu / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="1,16,256")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for c in (int(x) for x in args.concurrency.split(",")):
        got: dict[str, list[float]] = {"engine": [], "sut": []}
        for r in range(args.repeats):
            for loop in ("engine", "sut") if r % 2 == 0 else ("sut", "engine"):
                got[loop].append(cpu_us_per_request(loop, c, args.requests))
        row = {
            "concurrency": c,
            **{f"{k}_cpu_us_per_request": round(min(v), 2) for k, v in got.items()},
        }
        row["sut_over_engine"] = round(
            row["sut_cpu_us_per_request"] / row["engine_cpu_us_per_request"], 3
        )
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"requests": args.requests, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
