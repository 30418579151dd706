"""Does a sweep against real llama.cpp servers lose requests in the client?

Writes the random-weight GGUF of ``tiny_gguf.py``, serves it with
``llama-server`` (``--llama-server PATH``, started with ``--metrics``) and/or
llama-cpp-python's server (``--llama-python PY``), and runs ``infermeter sweep
--concurrency 1,2,4 --requests 24`` against each ``--runs`` times (the sweep of
issue #37, finding 10). Per point it prints the requests the client sent,
completed, failed (with reasons) and resent after a pooled connection lost them,
beside what the server itself logged in the same time: the requests it started
(llama-server: ``launch_slot`` lines; llama-cpp-python: uvicorn's access lines).
Server lines before the first point (the preflight's probe) are shown as point
``-``. A request lost in the client is failed here and missing there.

    python benchmarks/client/llama_server_sweep.py --llama-server /tmp/h37ll/llama-server
    python benchmarks/client/llama_server_sweep.py --llama-python /tmp/llama-venv/bin/python \\
        --runs 3 --src OTHER_CHECKOUT/src        # a sweep by another infermeter source

About 10-30 s a run of 24 requests a point, 35-50 s with ``--duration 10``, on a
2-core VM. ``--interrupt`` starts llama-cpp-python as it starts by default.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODEL = "tiny"
# A point's start line on the sweep's stderr (off a terminal): "point 2 of 3: ...: running".
_POINT_START = re.compile(r"^point (\d+)(?: of \d+)?: .*: running$")
# What each server writes once per request it took: llama-server when a slot
# takes the request's task, uvicorn (llama-cpp-python) when it answers.
_SERVER_REQUEST = {
    "llama-server": re.compile(r"launch_slot_with_task|processing task"),
    "llama-cpp-python": re.compile(r'"POST /v1/(?:chat/)?completions HTTP/1\.1" (\d+)'),
}


@dataclass
class TimedLog:
    """A process's output lines, each with the monotonic time it was read."""

    lines: list[tuple[float, str]] = field(default_factory=list)

    def follow(self, stream: Any, copy: Path | None = None) -> threading.Thread:
        def read() -> None:
            sink = copy.open("w", encoding="utf-8") if copy else None
            for raw in stream:
                line = raw.rstrip("\n")
                self.lines.append((time.monotonic(), line))
                if sink is not None:
                    sink.write(line + "\n")
                    sink.flush()
            if sink is not None:
                sink.close()

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        return thread


@dataclass
class PointRow:
    """One sweep point: the client's counts beside the server's own."""

    server: str
    run: int
    point: str
    sent: int
    completed: int
    failed: int
    resent: int
    reasons: dict[str, int]
    server_logged: int
    output_tokens: float = 0.0  # per completed request (an answer cut short shows)

    @property
    def unseen(self) -> int:
        """Requests sent that the server never logged (one resent after a
        pooled connection lost it unread is logged once, when it arrived)."""
        return max(0, self.sent - self.server_logged)


@dataclass(frozen=True)
class Served:
    """A running server: its kind, OpenAI base URL, timed log and model folder."""

    kind: str
    url: str
    log: TimedLog
    model_dir: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(kind: str, cmd: list[str], url: str, log: Path) -> Iterator[TimedLog]:
    """``cmd`` running until the block ends, its output timed; ready when
    ``url``/models answers (two minutes at most)."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    timed = TimedLog()
    reader = timed.follow(proc.stdout, log)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{kind} exited (see {log}): {' '.join(cmd)}")
            try:
                urllib.request.urlopen(url + "/models", timeout=2).close()
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{kind} did not answer within 120 s") from None
                time.sleep(0.3)
        yield timed
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(5)


def server_command(
    kind: str, binary: str, model: Path, port: int, interrupt: bool = False
) -> list[str]:
    """How each server is started: loopback, a context for four 96-token
    requests at once; llama-server with its Prometheus metrics."""
    if kind == "llama-server":
        return [
            binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            "-c", "2048", "-np", "4", "--alias", MODEL, "--metrics",
        ]  # fmt: skip
    # llama-cpp-python answers one request at a time; by default a request that
    # comes meanwhile cuts the running stream short ([DONE], then the connection
    # breaks: the client fails it, though the server took it). Queued instead:
    interrupts = [] if interrupt else ["--interrupt_requests", "False"]
    return [
        binary, "-m", "llama_cpp.server", "--model", str(model), "--host",
        "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--model_alias", MODEL,
        *interrupts,
    ]  # fmt: skip


def run_sweep(url: str, out: Path, args: argparse.Namespace) -> tuple[TimedLog, float]:
    """One ``infermeter sweep`` (its stderr timed); the time it ended."""
    cmd = [
        sys.executable, "-m", "infermeter", "sweep", "--url", url, "--model", MODEL,
        "--concurrency", args.concurrency, *_length(args),
        "--input-tokens", str(args.input_tokens), "--output-tokens",
        str(args.output_tokens), "--out", str(out), "--force", "--json",
        *(arg for opt in args.sut_opt for arg in ("--sut-opt", opt)),
    ]  # fmt: skip
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = str(Path(args.src).resolve())
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    timed = TimedLog()
    reader = timed.follow(proc.stderr)
    assert proc.stdout is not None
    proc.stdout.read()  # the --json document; the files say the same
    code = proc.wait(timeout=1800)
    reader.join(5)
    ended = time.monotonic()
    if code not in (0, 3) or not (out / "sweep.json").is_file():
        tail = " | ".join(line for _, line in timed.lines[-5:])
        raise RuntimeError(f"infermeter sweep exited {code}: {tail}")
    return timed, ended


def _length(args: argparse.Namespace) -> list[str]:
    """Each point's length: its seconds when given, else its requests."""
    if args.duration:
        return ["--duration", f"{args.duration:g}"]
    return ["--requests", str(args.requests)]


def point_windows(sweep_log: TimedLog, ended: float) -> list[tuple[float, float]]:
    """Each point's time: from its start line to the next one (the last: the end)."""
    starts = [t for t, line in sweep_log.lines if _POINT_START.match(line)]
    return list(zip(starts, [*starts[1:], ended], strict=True))


def server_counts(
    kind: str, log: TimedLog, since: float, windows: list[tuple[float, float]]
) -> tuple[int, list[int]]:
    """Requests the server logged before the first point (since ``since``) and
    in each point's window."""
    pattern = _SERVER_REQUEST[kind]
    before, per_point = 0, [0] * len(windows)
    for t, line in list(log.lines):
        if t < since or not pattern.search(line):
            continue
        if not windows or t < windows[0][0]:
            before += 1
            continue
        for i, (start, end) in enumerate(windows):
            if start <= t < end:
                per_point[i] += 1
    return before, per_point


def rows_of(
    kind: str, run: int, out: Path, before: int, logged: list[int]
) -> list[PointRow]:
    """The client's side from sweep.json and each point's result_summary.json."""
    points = json.loads((out / "sweep.json").read_text())["points"]
    if len(points) != len(logged):
        raise RuntimeError(f"{len(points)} points in sweep.json, {len(logged)} seen")
    rows = [PointRow(kind, run, "-", 0, 0, 0, 0, {}, before)]
    for point, server in zip(points, logged, strict=True):
        summary = json.loads(
            (out / point["point"] / "performance" / "result_summary.json").read_text()
        )
        sut = summary["infermeter"].get("sut") or {}
        rows.append(
            PointRow(
                server=kind,
                run=run,
                point=point["point"],
                sent=int(point["issued"]),
                completed=int(point["completed"]),
                failed=int(point["failed"]),
                resent=int(sut.get("resent_unanswered", 0)),
                reasons=dict(point.get("failure_reasons") or {}),
                server_logged=server,
                output_tokens=float(
                    (summary.get("output_sequence_lengths") or {}).get("avg") or 0.0
                ),
            )
        )
    return rows


def write_model(work: Path) -> Path:
    """The tiny GGUF and its tokenizer.json in ``work/model``."""
    model_dir = work / "model"
    subprocess.run(
        [sys.executable, str(HERE / "tiny_gguf.py"), str(model_dir)],
        check=True,
        capture_output=True,
    )
    return model_dir


@contextmanager
def started(
    kind: str, binary: str, model_dir: Path, work: Path, interrupt: bool = False
) -> Iterator[Served]:
    """``kind`` serving the tiny model on a free loopback port, for a ``with`` block."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    cmd = server_command(kind, binary, model_dir / "tiny.gguf", port, interrupt)
    with serving(kind, cmd, url, work / f"{kind}.log") as log:
        yield Served(kind, url, log, model_dir)


def sweep_rows(
    served: Served, out: Path, args: argparse.Namespace, run: int = 1
) -> list[PointRow]:
    """One sweep against ``served``: its points, the client's counts beside the server's."""
    since = time.monotonic()
    sweep_log, ended = run_sweep(served.url, out, args)
    time.sleep(0.5)  # the server's last lines
    windows = point_windows(sweep_log, ended)
    before, logged = server_counts(served.kind, served.log, since, windows)
    return rows_of(served.kind, run, out, before, logged)


def measure(
    servers: dict[str, str], work: Path, args: argparse.Namespace
) -> list[PointRow]:
    """Every server's every run's points."""
    model_dir = write_model(work)
    rows: list[PointRow] = []
    for kind, binary in servers.items():
        with started(kind, binary, model_dir, work, args.interrupt) as served:
            for run in range(1, args.runs + 1):
                out = work / f"{kind}-{run}"
                rows.extend(sweep_rows(served, out, args, run))
    return rows


def print_table(rows: list[PointRow]) -> None:
    print(
        "| server | run | point | sent | completed | failed | resent "
        "| server logged | never reached the server | output tokens / request "
        "| failure reasons |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        reasons = "; ".join(f"{n} x {text}" for text, n in r.reasons.items())
        lost = "" if r.point == "-" else str(r.unseen)
        tokens = "" if r.point == "-" else f"{r.output_tokens:.1f}"
        print(
            f"| {r.server} | {r.run} | {r.point} | {r.sent} | {r.completed} | "
            f"{r.failed} | {r.resent} | {r.server_logged} | {lost} | {tokens} "
            f"| {reasons} |"
        )
    totals: Counter[str] = Counter()
    for r in rows:
        if r.point != "-":
            totals.update(sent=r.sent, completed=r.completed, failed=r.failed)
            totals.update(resent=r.resent, lost=r.unseen)
    print(
        f"\nall points: {totals['sent']} sent, {totals['completed']} completed, "
        f"{totals['failed']} failed, {totals['resent']} resent, "
        f"{totals['lost']} never reached the server"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-server", help="the llama-server binary")
    parser.add_argument("--llama-python", help="a Python with llama-cpp-python[server]")
    parser.add_argument("--runs", type=int, default=3, help="sweeps per server")
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--requests", type=int, default=24, help="per point")
    parser.add_argument(
        "--duration", type=float, default=0.0, help="seconds per point (not --requests)"
    )
    # Words, not tokens: the byte-level tokenizer splits every word into its
    # bytes, so prompts sized in its tokens cannot be built (sized_prompts.py).
    parser.add_argument("--input-tokens", type=int, default=8, help="words")
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--src", help="infermeter source folder to sweep with")
    parser.add_argument(
        "--sut-opt",
        action="append",
        default=[],
        help="passed to the sweep, e.g. stream=false",
    )
    parser.add_argument(
        "--interrupt",
        action="store_true",
        help="llama-cpp-python as it starts by default: a new request cuts the "
        "running stream short",
    )
    parser.add_argument("--keep", type=Path, help="keep the logs and sweeps here")
    args = parser.parse_args(argv)
    if not args.llama_server and not args.llama_python:
        parser.error("give --llama-server PATH and/or --llama-python PY")
    return args


def servers_of(args: argparse.Namespace) -> dict[str, str]:
    servers = {}
    if args.llama_server:
        servers["llama-server"] = args.llama_server
    if args.llama_python:
        servers["llama-cpp-python"] = args.llama_python
    return servers


def main() -> None:
    args = parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        rows = measure(servers_of(args), args.keep, args)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            rows = measure(servers_of(args), Path(tmp), args)
    print_table(rows)


if __name__ == "__main__":
    main()
