"""A server that stops answering mid-run (SIGSTOP): the run ends on the completion
timeout with honest figures: a non-negative duration, rates from the samples that
completed, and the same failed / never-answered counts in run.json and records.npz.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from infermeter.servers.mock import MockConfig, MockProcess

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
    cmd = [
        sys.executable, "-m", "infermeter", "run", "--sut", "openai",
        "--url", url, "--model", "m", "--benchmark", "llama2-70b",
        "--scenario", "Server", "--target-qps", "20", "--min-duration", "2s",
        "--min-query-count", "16", "--performance-sample-count", "16",
        "--total-sample-count", "16", "--completion-timeout", "2s",
        "--output-dir", str(out), "--store", str(tmp_path / "store.db"),
    ]  # fmt: skip
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert mock._process is not None and mock._process.pid
    pid = mock._process.pid
    try:
        deadline = time.monotonic() + 60
        while _served(url) < 12:  # some answers first, then the server hangs
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.05)
        os.kill(pid, signal.SIGSTOP)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        os.kill(pid, signal.SIGCONT)
        mock.stop()
        if run.poll() is None:
            run.kill()
    assert run.returncode == 3, stdout.decode() + stderr.decode()
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
