"""A Server run at 2,000 QPS (Poisson) from 2 Ray actors, then one with an actor killed.

Against ``serve-mock`` with two server processes on one port (max-throughput,
8 output tokens). Part 1: ``infermeter run``'s own path (``runs.run.execute``)
with ``--ray local --ray-actors 2``: verdict, every sample accounted for,
issue and send lateness p99, each actor's clock offset and uncertainty.
Part 2: the same run with one actor killed (SIGKILL) after ``--kill-after``
seconds: the verdict, the reason, and the seconds from the kill until the
run returned (folder written, actors stopped).

    python benchmarks/client/ray_server.py                   # about 2 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from infermeter.loadgen.settings import Scenario
from infermeter.runs.request import RunRequest
from infermeter.runs.run import RunReport, execute
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.workloads.datasets.factory import DatasetOptions
from infermeter.workloads.datasets.lengths import parse_length


def actor_pids() -> list[int]:
    """Processes whose title Ray set to ``ray::AgentActor``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"ray::AgentActor"):
                pids.append(int(entry.name))
    return sorted(pids)


def request(
    url: str, out: Path, args: argparse.Namespace, seconds: float
) -> RunRequest:
    return RunRequest(
        benchmark="llama2-70b",
        scenario=Scenario.SERVER,
        sut="openai",
        sut_options={
            "url": url,
            "model": "mock-model",
            "ray": "local",
            "ray_actors": str(args.actors),
        },
        target_qps=args.qps,
        overrides={"min_duration_ms": int(seconds * 1000), "min_query_count": 100},
        dataset_options=DatasetOptions(
            input_len=parse_length("128"), output_len=parse_length("8")
        ),
        total_sample_count=1024,
        output_dir=out,
        store=out.parent / "store.db",
    )


def summary(report: RunReport) -> dict[str, Any]:
    doc = report.document
    metrics, client = doc["metrics"], doc.get("client", {})
    stats = doc["sut"].get("stats", {})
    return {
        "verdict": doc["verdict"]["result"],
        "reasons": [r[:160] for r in doc["verdict"].get("reasons", [])],
        "samples_issued": metrics.get("samples_issued"),
        "samples_completed": metrics.get("samples_completed"),
        "samples_failed": metrics.get("samples_failed"),
        "issue_lateness_p99_ms": metrics.get("issue_lateness_ns", {}).get("p99", 0)
        / 1e6,
        "send_lateness_p99_ms": client.get("send_lateness_ns", {}).get("p99", 0) / 1e6,
        "client_bound": client.get("client_bound"),
        "clock_error_ns": client.get("clock_error_ns"),
        "actors": [
            {k: c.get(k) for k in ("requests", "completed", "clock", "lost")}
            for c in stats.get("clients", [])
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--qps", type=float, default=2000.0)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--kill-after", type=float, default=5.0)
    parser.add_argument("--server-workers", type=int, default=2)
    args = parser.parse_args()
    mock = MockConfig(mode="max-throughput", model="mock-model")
    result: dict[str, Any] = {"machine": os.uname().nodename, "cpus": os.cpu_count()}
    with (
        tempfile.TemporaryDirectory() as tmp,
        MockProcess(mock, workers=args.server_workers) as url,
    ):
        result["valid_run"] = summary(
            execute(request(url, Path(tmp) / "a", args, args.seconds))
        )
        print(json.dumps(result["valid_run"], indent=2), flush=True)
        killed: list[float] = []

        def kill() -> None:
            # The actors start inside execute(): count from when they exist.
            deadline = time.monotonic() + 300
            while len(actor_pids()) < args.actors and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(args.kill_after)
            pids = actor_pids()
            if pids:
                killed.append(time.monotonic())
                os.kill(pids[-1], signal.SIGKILL)

        timer = threading.Thread(target=kill, daemon=True)
        timer.start()
        report = execute(request(url, Path(tmp) / "b", args, 60.0))
        returned = time.monotonic()
        timer.join()
        result["killed_run"] = summary(report)
        result["killed_run"]["seconds_from_kill_to_return"] = (
            round(returned - killed[0], 2) if killed else None
        )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
