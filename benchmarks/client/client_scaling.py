"""Closed-loop requests/s against a max-throughput mock: where the loop runs, and many clients.

Each point runs a closed loop (``LoadSpec(mode="concurrency")``) through the
engine for ``--requests`` requests after a warm-up, and reports completed
requests/s, TTFT p50, client CPU per 1,000 requests and send lateness. Every
point is measured twice per round, interleaved: with the loop on the engine's
issue thread (``engine``: the path before issue #38, one thread hop each way
per request, and a pipe round trip with worker processes) and with the loop
run by the SUT on its own thread (``sut``: ``loadgen/closed_loop.py``,
``suts/remote_loop.py``); the ratio sut/engine is the figure to read, and
``in_flight_mean`` (Little's law over the records) says how much of the
concurrency asked for was really in flight.

On a shared machine, run the one-core mode under ``chrt -f 1`` (as root): the
pinned client and mock then run as if their cores were their own; without it,
other processes on CPU 0 decide the figures (the SUT loop, never sleeping
between requests, gets a smaller share of a contended core from the
scheduler than the engine loop's two threads).

``--mode one-core``: one client process (``--workers 1``) pinned to CPU 0,
the mock (one process) pinned to CPU 1, at each ``--concurrency`` level.
``--mode scaling``: 1, 2, 4, 8 client processes or Ray actors against a
multi-process mock (``--server-workers``, SO_REUSEPORT). Use a machine with
at least (clients + server workers) cores: with fewer, the clients and the
server share cores and the table shows the machine, not the client. Ray
points run on a private local cluster (127.0.0.1, no dashboard).

    python benchmarks/client/client_scaling.py --mode one-core \
        --concurrency 16,64,256 --requests 5000 --repeats 3
    python benchmarks/client/client_scaling.py --transport process \
        --clients 1,2,4,8 --server-workers 6
    python benchmarks/client/client_scaling.py --transport ray --clients 1,2,4 --server-workers 2

``--profile``: instead, where one request's CPU goes on the HTTP client's event
loop thread (one core, the SUT loop, cProfile's own time by module group;
cProfile inflates Python-level code against C).

    python benchmarks/client/client_scaling.py --mode one-core --profile --concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime as dt
import json
import os
import pstats
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.suts.http_factory import create_http_sut
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts

ISL, OSL = 128, 32
LOOPS = ("engine", "sut")
TICK = os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the mock's server processes, read once)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for kid in map(int, (task / "children").read_text().split()):
            cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
            if b"resource_tracker" not in cmdline:  # multiprocessing's, not a server
                out += [kid, *descendants(kid)]
    return out


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` so far (those still running)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def measure(
    sut: Any, loop: str, concurrency: int, requests: int, server: list[int]
) -> dict[str, float]:
    """One measured load with the closed loop on ``loop``'s thread."""
    sut.runs_closed_loop = loop == "sut"
    spec = LoadSpec(
        mode="concurrency",
        concurrency=concurrency,
        requests=requests,
        warmup_requests=min(1000, requests // 5),
    )
    before = cpu_s(server)
    result = run_load(sut, spec, sample_count=1024)
    server_cpu = cpu_s(server) - before
    m, cert = result.metrics, result.certification
    ttft = m.ttft_ns[m.ttft_ns > 0] / 1e6
    rec, n = result.phase.records, result.phase.samples_issued
    issued, completed = rec.issued_ns[:n], rec.completed_ns[:n]
    busy = float((completed - issued).sum())
    span = float(completed.max() - issued.min()) if n else 1.0
    # A slot's idle time: the k-th completion frees the slot the (k + K)-th issue
    # fills (the hop from a completion to the next send).
    k = concurrency
    gap = (np.sort(issued)[k:] - np.sort(completed)[:-k]) / 1e6
    return {
        "slot_gap_p50_ms": float(np.percentile(gap, 50)) if gap.shape[0] else 0.0,
        # Little's law: the mean number in flight (the rest of the K slots idled,
        # waiting for the next query to be issued and sent).
        "in_flight_mean": busy / span,
        "rate": m.completed / cert.wall_s,
        "ttft_p50_ms": float(np.percentile(ttft, 50)) if ttft.shape[0] else 0.0,
        "cpu_s_per_1000": cert.cpu_s_per_1000,
        "late_p99_ms": cert.send_lateness_ns.get("p99", 0) / 1e6,
        # The mock's CPU over the point's wall time, per server process: near 1, the
        # server (not the client) may be the limit.
        "mock_busy": server_cpu / max(1e-9, cert.wall_s) / max(1, len(server)),
        "failed": float(m.failed),
    }


def point(
    config: OpenAIConfig, concurrency: int, args: argparse.Namespace, server: list[int]
) -> list[dict[str, Any]]:
    """One SUT (clients started untimed); ``--repeats`` rounds of both loops, interleaved."""
    prompts = SyntheticPrompts(1024, input_tokens=ISL, output_tokens=OSL)
    loops = tuple(args.loops.split(","))
    runs: dict[str, list[dict[str, float]]] = {loop: [] for loop in loops}
    with create_http_sut(config, prompts) as sut:
        for r in range(args.repeats):
            for loop in loops if r % 2 == 0 else loops[::-1]:
                got = measure(sut, loop, concurrency, args.requests, server)
                runs[loop].append(got)
    rows = []
    for loop in loops:
        got = runs[loop]
        rows.append(
            {
                "clients": max(config.workers, config.ray_actors if config.ray else 1),
                "concurrency": concurrency,
                "loop": loop,
                **{
                    key: round(statistics.median(g[key] for g in got), 3)
                    for key in got[0]
                },
                "rates": [round(g["rate"], 1) for g in got],
            }
        )
    if loops == LOOPS:
        after, before = rows[1]["rate"], rows[0]["rate"]
        rows[1]["rate_ratio_sut_over_engine"] = (
            round(after / before, 3) if before else None
        )
    return rows


GROUPS = (
    ("loadgen/records", "engine: the sink (records.py)"),
    ("loadgen/", "engine: the closed loop (loadgen/*)"),
    ("suts/sse", "SSE framing and JSON decoding"),
    ("/json/", "SSE framing and JSON decoding"),
    ("suts/http_local", "client: scheduling (http_local)"),
    ("suts/http_exchange", "client: the exchange (http_exchange)"),
    ("infermeter", "infermeter: other"),
    ("aiohttp", "aiohttp, yarl, multidict"),
    ("yarl", "aiohttp, yarl, multidict"),
    ("multidict", "aiohttp, yarl, multidict"),
    ("asyncio", "asyncio"),
    ("numpy", "numpy"),
)


def profile(url: str, concurrency: int, requests: int) -> dict[str, float]:
    """Share of the loop thread's profiled time per module group."""
    prompts = SyntheticPrompts(1024, input_tokens=ISL, output_tokens=OSL)
    with create_http_sut(OpenAIConfig(url=url, model="mock-model"), prompts) as sut:
        run_load(
            sut, LoadSpec(concurrency=concurrency, requests=1000), sample_count=1024
        )
        prof = cProfile.Profile()
        sut.loop.call_soon_threadsafe(prof.enable)
        run_load(
            sut, LoadSpec(concurrency=concurrency, requests=requests), sample_count=1024
        )
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), sut.loop).result()
        sut.loop.call_soon_threadsafe(prof.disable)
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), sut.loop).result()
    shares: dict[str, float] = {}
    stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    for (path, _, name), (_, _, own, _, _) in stats.items():
        where = f"{path} {name}"
        group = next((g for key, g in GROUPS if key in where), "builtins and other")
        shares[group] = shares.get(group, 0.0) + own
    total = sum(shares.values()) or 1.0
    return {
        g: round(100 * t / total, 1)
        for g, t in sorted(shares.items(), key=lambda kv: -kv[1])
    }


def configs(url: str, args: argparse.Namespace) -> list[tuple[OpenAIConfig, int]]:
    levels = [int(c) for c in args.concurrency.split(",")]
    if args.mode == "one-core":
        return [(OpenAIConfig(url=url, model="mock-model"), c) for c in levels]
    out = []
    for clients in (int(c) for c in args.clients.split(",")):
        if args.transport == "ray":
            config = OpenAIConfig(
                url=url, model="mock-model", ray="local", ray_actors=clients
            )
        else:
            config = OpenAIConfig(url=url, model="mock-model", workers=clients)
        out += [(config, c) for c in levels]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("scaling", "one-core"), default="scaling")
    parser.add_argument("--transport", choices=("process", "ray"), default="process")
    parser.add_argument("--clients", default="1,2,4,8")
    parser.add_argument(
        "--server-workers", type=int, default=max(1, (os.cpu_count() or 2) // 2)
    )
    parser.add_argument("--concurrency", default="256", help="levels, e.g. 16,64,256")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    parser.add_argument("--profile", action="store_true", help="where the CPU goes")
    parser.add_argument(
        "--loops", default="engine,sut", help="sut alone halves a scaling run's time"
    )
    args = parser.parse_args()
    mock = MockConfig(mode="max-throughput", model="mock-model")
    pinned = args.mode == "one-core" and (os.cpu_count() or 1) > 1
    if pinned:
        os.sched_setaffinity(0, {1})  # the mock (a child) inherits CPU 1
    server_workers = 1 if args.mode == "one-core" else args.server_workers
    rows = []
    with MockProcess(mock, workers=server_workers) as url:
        if pinned:
            os.sched_setaffinity(0, {0})  # the client's threads start after this
        server = descendants(os.getpid())  # before any client process starts
        if args.profile:
            level = int(args.concurrency.split(",")[0])
            print(json.dumps(profile(url, level, args.requests), indent=2))
            return
        for config, concurrency in configs(url, args):
            for row in point(config, concurrency, args, server):
                rows.append(row)
                print(json.dumps(row), flush=True)
    report = {
        "date": dt.date.today().isoformat(),
        "machine": os.uname().nodename,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "mode": args.mode,
        "pinned": "client CPU 0, mock CPU 1" if pinned else "not pinned",
        "server_workers": server_workers,
        "requests": args.requests,
        "isl_osl": [ISL, OSL],
        "rows": rows,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
