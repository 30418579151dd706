"""One client run of reference_side_by_side.py: a pinned process tree, its CPU, the mock's log.

``run_tool`` starts infermeter (this file's ``--child`` entry, run_load with the
openai SUT) or the reference client (``inference-endpoint benchmark online``)
pinned to the client core, samples the CPU and memory of its whole process tree
every ``SAMPLE_S`` (``/proc``), and reads back what both sides recorded: the
client's own per-request first-token times and the mock's log rows of the run
(``GET /mock/requests``), matched by the CRC-32 of each request's prompt
(every prompt of a run is distinct).
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.servers.mock_served import UNSET, prompt_crc

MOCK_CPUS = {1}
SAMPLE_S = 0.02
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20
OUT_TOKENS = 32
WORDS = 127  # each prompt: a unique id word, then WORDS w-words (the tokenizer's)


class Mock:
    """``serve-mock --mode max-throughput`` pinned to the mock's core (CPU 1)."""

    def __init__(self, server: str, *, chunked: bool = False) -> None:
        argv = [sys.executable, "-m", "infermeter", "serve-mock", "--port", "0"]
        argv += ["--chunked"] if chunked else []
        self.proc = subprocess.Popen(
            [*argv, "--mode", "max-throughput", "--server", server],
            preexec_fn=lambda: os.sched_setaffinity(0, MOCK_CPUS),
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        found = re.search(r"http://\S+/v1", self.proc.stderr.readline())
        if found is None:
            self.stop()
            raise SystemExit("the mock did not start")
        self.url = found[0]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def prompt_texts(n: int) -> list[str]:
    """``n`` distinct prompts of 128 words (word i of the tests' tokenizer: ``w{i}``)."""
    return [
        f"id{i} " + " ".join(f"w{(i + j) % 1000}" for j in range(WORDS))
        for i in range(n)
    ]


@dataclass
class Run:
    """What one client run cost and recorded."""

    tool: str
    level: str
    n: int
    wall_s: float = 0.0
    cpu_s: float = 0.0  # the whole tree, start to exit (rusage of children)
    window_cpu_s: float = float("nan")  # the tree, inside the mock's window
    window_s: float = float("nan")  # first request received .. last byte, mock's clock
    peak_rss_mb: float = 0.0
    escaped: list[str] = field(default_factory=list)  # left the client core
    completed: int = 0
    failed: int = 0
    negative_tpot: int = 0
    ttft_ms: list[float] = field(default_factory=list)  # the client's own
    excess_ms: list[float] = field(default_factory=list)  # client TTFT - mock TTFT
    unmatched: int = 0
    mock_completed: int = 0
    mock_cpu_s: float = 0.0  # start to exit
    mock_window_cpu_s: float = float("nan")  # inside the window
    error: str = ""


class TreeSampler(threading.Thread):
    """CPU seconds, resident memory and affinity of a process tree, sampled."""

    def __init__(self, root: int, cpus: set[int], mock: int) -> None:
        super().__init__(daemon=True)
        self.root, self.cpus, self.mock = root, cpus, mock
        # (monotonic ns, CPU s of the tree, CPU s of the mock)
        self.samples: list[tuple[int, float, float]] = []
        self.escaped: set[str] = set()  # names of processes that left the client core
        self.peak_rss_mb = 0.0
        self._stop_event = threading.Event()
        self._seen: dict[
            int, float
        ] = {}  # CPU of every process once seen (exited ones)

    def run(self) -> None:
        while not self._stop_event.wait(SAMPLE_S):
            self.sample()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def sample(self) -> None:
        rss = 0.0
        for pid in _tree(self.root):
            stat = _stat(pid)
            if stat is None:
                continue
            self._seen[pid] = (int(stat[11]) + int(stat[12])) * TICK_S
            rss += int(stat[21]) * PAGE_MB
            if not _allowed(pid) <= self.cpus and (name := _name(pid)):
                self.escaped.add(name)
        self.peak_rss_mb = max(self.peak_rss_mb, rss)
        mock = process_cpu_s(self.mock)
        self.samples.append((time.monotonic_ns(), sum(self._seen.values()), mock))

    def cpu_between(self, start_ns: int, end_ns: int, column: int = 1) -> float:
        """CPU seconds of the tree (column 1) or the mock (2) from ``start_ns`` to
        ``end_ns``, interpolated between samples."""
        if len(self.samples) < 2:
            return float("nan")
        t = np.array([s[0] for s in self.samples], dtype=np.float64)
        cpu = np.array([s[column] for s in self.samples])
        return float(np.interp(end_ns, t, cpu) - np.interp(start_ns, t, cpu))


def _tree(root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _stat(pid: int) -> list[str] | None:
    try:
        with Path(f"/proc/{pid}/stat").open() as f:
            return f.read().rsplit(")", 1)[1].split()  # [0]: field 3 (state)
    except (OSError, IndexError):
        return None


def _name(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline")
            .read_bytes()
            .replace(b"\0", b" ")[:120]
            .decode()
        )
    except OSError:
        return str(pid)


def _allowed(pid: int) -> set[int]:
    try:
        return set(os.sched_getaffinity(pid))
    except OSError:
        return set()


def process_cpu_s(pid: int) -> float:
    stat = _stat(pid)
    return 0.0 if stat is None else (int(stat[11]) + int(stat[12])) * TICK_S


def mock_log(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.replace("/v1", "/mock/requests"), timeout=60) as r:
        return dict(json.loads(r.read()))


def run_tool(
    argv: list[str], run: Run, cpus: set[int], mock_url: str, mock_pid: int
) -> dict[str, Any]:
    """Run ``argv`` pinned to ``cpus``; fill ``run``'s cost; return the mock's rows."""
    mark = mock_log(mock_url)["requests"]
    mock_cpu = process_cpu_s(mock_pid)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        preexec_fn=lambda: os.sched_setaffinity(0, cpus),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sampler = TreeSampler(proc.pid, cpus, mock_pid)
    sampler.start()
    output, _ = proc.communicate(timeout=3600)
    sampler.stop()
    run.wall_s = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run.mock_cpu_s = process_cpu_s(mock_pid) - mock_cpu
    run.peak_rss_mb, run.escaped = sampler.peak_rss_mb, sorted(sampler.escaped)
    if proc.returncode != 0:
        run.error = f"exit {proc.returncode}: {output.strip().splitlines()[-1:]}"
    rows = {k: v[mark:] for k, v in mock_log(mock_url).items() if isinstance(v, list)}
    done = [t for t in rows["last_byte_ns"] if t != UNSET]
    run.mock_completed = len(done)
    if rows["received_ns"] and done:
        first, last = min(rows["received_ns"]), max(done)
        run.window_s = (last - first) / 1e9
        run.window_cpu_s = sampler.cpu_between(first, last)
        run.mock_window_cpu_s = sampler.cpu_between(first, last, column=2)
    return rows


def match(run: Run, client: dict[int, tuple[int, int]], rows: dict[str, Any]) -> None:
    """Client TTFT minus the mock's, per request: ``client`` maps a prompt's CRC to
    (issued ns, first token ns) on CLOCK_MONOTONIC, as the mock's log is."""
    mock: dict[int, int] = {}
    twice: set[int] = set()
    for crc, received, first in zip(
        rows["prompt_crc32"], rows["received_ns"], rows["first_byte_ns"], strict=True
    ):
        if first == UNSET:
            continue
        if crc in mock:
            twice.add(crc)
        mock[crc] = first - received
    for crc, (issued, first) in client.items():
        if crc in mock and crc not in twice:
            run.excess_ms.append((first - issued - mock[crc]) / 1e6)
        else:
            run.unmatched += 1


def crc_of(text: str) -> int:
    return prompt_crc(text.split())


# --- the infermeter side: this file run as a child ---------------------------


class _Texts:
    """A PromptSource over a list of texts."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    @property
    def name(self) -> str:
        return "side-by-side"

    def prompt(self, index: int) -> Any:
        from infermeter.suts.prompts import Prompt

        return Prompt(text=self.texts[index], max_tokens=OUT_TOKENS)


def _child(spec: dict[str, Any]) -> None:
    """Run infermeter's load point; write its per-request records as JSON."""
    from infermeter.loadgen.records import STATUS_OK
    from infermeter.runs.load import LoadSpec, run_load
    from infermeter.suts.http_factory import create_http_sut
    from infermeter.suts.openai_options import config_from_options

    texts = prompt_texts(spec["n"])
    options = {"url": spec["url"], "model": "m", "api": "chat"}
    options |= {"max_tokens": str(OUT_TOKENS), **spec["sut_opts"]}
    config, key = config_from_options(options)
    if spec["rate"]:
        load = LoadSpec(mode="rate", rate=spec["rate"], requests=spec["n"])
    else:
        load = LoadSpec(mode="concurrency", concurrency=spec["c"], requests=spec["n"])
    with create_http_sut(config, _Texts(texts), api_key=key) as sut:
        result = run_load(sut, load, sample_count=spec["n"])
    phase, m = result.phase, result.metrics
    n, rec = phase.samples_issued, phase.records
    sample = phase.schedule.sample_indices[:n]
    ok = (rec.status[:n] == STATUS_OK) & (rec.first_token_ns[:n] != UNSET)
    out = {
        "completed": int(m.completed),
        "failed": int(m.failed),
        "negative_tpot": int((m.tpot_ns < 0).sum()),
        "requests": [
            [
                crc_of(texts[int(sample[i])]),
                int(phase.query_origin_ns[i]),
                int(rec.first_token_ns[i]),
            ]
            for i in np.flatnonzero(ok)
        ],
    }
    Path(spec["out"]).write_text(json.dumps(out))


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    _child(json.loads(sys.argv[2]))
