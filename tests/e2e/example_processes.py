"""Example processes forked from one that has imported infermeter once.

Each README or --help example is a process of its own, as ``python -m
infermeter ARGS`` makes it: its own folder, environment, stdin (none), stdout,
stderr and exit code. Started with ``subprocess``, each of ~110 examples
imported the CLI first (~1 CPU-s each, most of a short example's cost). Here
one server process imports it and forks each example from there: the child
sets its folder, environment and ``sys.argv``, runs ``infermeter.__main__``
as ``-m`` does, and ends as a Python process does (non-daemon threads joined,
atexit run, streams flushed). The server reaps its children and reports each
exit code.

Protocol (the server's stdin and stdout, one line each): a JSON request
``{"argv", "cwd", "env", "out", "err"}`` is answered ``pid PID`` at once and
``exit PID CODE CPU_S`` when that process ends (``-N``: killed by signal N;
CPU_S: its CPU seconds and its waited-for children's).
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import Future
from pathlib import Path
from typing import Any

# Imported before any fork: what most examples import (the CLI, the run
# engine, the HTTP client, numpy; pandas: the exports and dataset conversions).
# Nothing here starts a thread (checked): a fork copies only the thread that forks.
PRELOAD = (
    "infermeter.cli.main",
    "infermeter.runs.run",
    "infermeter.suts.registry",
    "infermeter.suts.openai_http",
    "infermeter.runs.endpoint_sweep",
    "infermeter.results.export",
    "pandas",
)


def serve() -> None:
    """The server: fork one example per request line, report each exit."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a forked child would lack those threads
        raise SystemExit(
            f"a preloaded module started a thread: {threading.enumerate()}"
        )
    os.write(1, b"ready\n")
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], 0.05)
        if readable:
            chunk = os.read(0, 1 << 16)
            if not chunk:  # the test process ended: so do the examples left
                _end_children()
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                pid = os.fork()
                if pid == 0:
                    _child(json.loads(line))  # never returns: it exits
                _children.add(pid)
                os.write(1, f"pid {pid}\n".encode())
        _reap()


_children: set[int] = set()


def _reap() -> None:
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _children.discard(pid)
        cpu = usage.ru_utime + usage.ru_stime
        code = os.waitstatus_to_exitcode(status)
        os.write(1, f"exit {pid} {code} {cpu:.3f}\n".encode())


def _end_children() -> None:
    """Kill the examples still running (their tests ended first), and reap them."""
    for pid in list(_children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while True:
            os.waitpid(-1, 0)


def _child(request: dict[str, Any]) -> None:
    """Become ``python -m infermeter ARGV`` in ``cwd`` with ``env``."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]  # ``-m`` puts the working folder first
    sys.argv = ["infermeter", *request["argv"]]  # argv[0]: set by run_module
    runpy.run_module("infermeter", run_name="__main__", alter_sys=True)
    raise SystemExit(0)


class Forks:
    """The test side: start examples in the server, wait for their exit codes."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env  # the examples' own adds to it
        self._proc = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        ready = self._stdout.readline()
        if ready != b"ready\n":
            self._proc.kill()
            raise RuntimeError(f"the example server did not start: {ready!r}")
        self._lock = threading.Lock()
        self._started: Future[int] | None = None
        self._exits: dict[int, Future[tuple[int, float]]] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def start(self, argv: list[str], cwd: Path, env: dict[str, str]) -> int:
        """Start ``infermeter ARGV`` in ``cwd``; its pid. Its stdout and stderr go
        to ``stdout.txt`` and ``stderr.txt`` beside ``cwd`` (``output``)."""
        request = {"argv": argv, "cwd": str(cwd), "env": env,
                   "out": str(cwd.parent / "stdout.txt"),
                   "err": str(cwd.parent / "stderr.txt")}  # fmt: skip
        with self._lock:
            self._started = Future()
            self._stdin.write(json.dumps(request).encode() + b"\n")
            self._stdin.flush()
            return self._started.result(timeout=120)

    def wait(self, pid: int, timeout: float | None) -> tuple[int, float]:
        """Its exit code (``-N``: signal N) and CPU seconds; TimeoutError when it
        runs past ``timeout``."""
        return self._exits[pid].result(timeout=timeout)

    def kill(self, pid: int, sig: int = signal.SIGKILL) -> None:
        """Signal it, unless it has ended (its pid may be another's by then)."""
        if not self._exits[pid].done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def await_answer(self, pid: int, port: int, budget: float) -> int | None:
        """None once ``http://127.0.0.1:PORT/v1/models`` answers (a server
        example); its exit code (never 0) when it ended first; 124 when neither
        happened in ``budget`` seconds."""
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                return self.wait(pid, 0)[0] or 1
            try:
                url = f"http://127.0.0.1:{port}/v1/models"
                with urllib.request.urlopen(url, timeout=5):
                    return None
            except OSError:
                time.sleep(0.2)
        return 124

    def stop(self, pid: int) -> None:
        """SIGTERM (a server's Ctrl-C), SIGKILL if it is still up 30 s later."""
        self.kill(pid, signal.SIGTERM)
        try:
            self.wait(pid, 30)
        except TimeoutError:
            self.kill(pid)

    @staticmethod
    def output(cwd: Path) -> str:
        """Its stdout, then its stderr (as ``capture_output`` read them)."""
        return "".join(
            (cwd.parent / name).read_text(errors="replace")
            for name in ("stdout.txt", "stderr.txt")
        )

    def close(self) -> None:
        self._stdin.close()
        try:
            self._proc.wait(60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def _read(self) -> None:
        for line in self._stdout:
            kind, pid, *code = line.decode().split()
            if kind == "pid":
                self._exits[int(pid)] = Future()
                assert self._started is not None
                self._started.set_result(int(pid))
            else:
                self._exits[int(pid)].set_result((int(code[0]), float(code[1])))


if __name__ == "__main__":
    serve()
