"""A server that stops answering mid-run (SIGSTOP): the run ends on the completion
timeout with honest figures: a non-negative duration, rates from the samples that
completed, and the same failed / never-answered counts in run.json and records.npz.

The mock is a child process (SIGSTOP is the point); the run is in-process
through ``main()`` on the main thread (it installs signal handlers), watched
from a thread that stops the mock.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from infermeter.servers.mock import MockConfig, MockProcess
from tests.cli_main import run_main

pytestmark = pytest.mark.integration


def _served(url: str) -> int:
    base = url.removesuffix("/v1")
    with urllib.request.urlopen(base + "/stats", timeout=5) as resp:
        # answers written whole: the kernel delivers them even once stopped
        return int(json.loads(resp.read()).get("completed", 0))


def test_completion_timeout_against_a_stopped_server(tmp_path: Path) -> None:
    cfg = MockConfig(
        mode="timed", ttft="const:0.01", itl="const:0.002", output_tokens="const:8"
    )
    mock = MockProcess(cfg)
    url = mock.start()
    out = tmp_path / "run"
    args = [
        "run", "--sut", "openai",
        "--url", url, "--model", "m", "--benchmark", "llama2-70b",
        "--scenario", "Server", "--target-qps", "20", "--min-duration", "2s",
        "--min-query-count", "16", "--performance-sample-count", "16",
        "--total-sample-count", "16", "--completion-timeout", "2s",
        "--output-dir", str(out), "--store", str(tmp_path / "store.db"),
    ]  # fmt: skip
    assert mock._process is not None and mock._process.pid
    pid = mock._process.pid
    finished = threading.Event()
    stopped: list[bool] = []

    def hang_after_some_answers() -> None:
        deadline = time.monotonic() + 60
        while _served(url) < 12:  # some answers first, then the server hangs
            if finished.is_set() or time.monotonic() > deadline:
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGSTOP)
        stopped.append(True)

    watcher = threading.Thread(target=hang_after_some_answers, daemon=True)
    watcher.start()
    try:
        done = run_main(*args)
    finally:
        finished.set()
        watcher.join(10)
        os.kill(pid, signal.SIGCONT)
        mock.stop()
    assert stopped, "the run ended before 12 answers"
    assert done.code == 3, done.output
    doc = json.loads((out / "run.json").read_text())
    m = doc["metrics"]
    assert m["duration_s"] >= 0
    assert m["samples_completed"] >= 11  # the 12 answers less the preflight probe
    assert m["samples_per_second"] > 0 and m["tokens_per_second"] > 0
    # tokens/s is the completed samples' tokens over the time to the last completion
    assert m["tokens_per_second"] == pytest.approx(
        m["token_count"] / m["duration_s"], rel=1e-9
    )
    rec = np.load(out / "records.npz")
    issued = rec["issued_ns"] >= 0
    failed = int((rec["status"][issued] != 0).sum())
    missing = int(((rec["completed_ns"] < 0) & (rec["status"] == 0))[issued].sum())
    ok = int(((rec["completed_ns"] >= 0) & (rec["status"] == 0))[issued].sum())
    assert (m["samples_failed"], m["samples_missing"]) == (failed, missing)
    assert m["samples_completed"] == ok and missing > 0
    assert any("stopped answering" in r for r in doc["verdict"]["reasons"])
