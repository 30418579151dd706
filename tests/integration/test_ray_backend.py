"""The Ray backend: actors send their slices, stream completions back, die loudly.

One local Ray cluster for the whole module, bound to 127.0.0.1 with no
dashboard and a small object store; skipped when ray is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.errors import SUTError
from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import Prompt, SyntheticPrompts
from infermeter.testing.verdicts import only_latency_reasons

# Before Ray is imported: the local cluster takes 127.0.0.1 as its node IP.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray")

from infermeter.suts.ray_actors import RayHttpSUT  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    started = not ray.is_initialized()
    if started:
        ray.init(
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            num_cpus=4,
            object_store_memory=80 * 1024 * 1024,
            log_to_driver=False,
        )
    # Loopback only: every node of the cluster is 127.0.0.1.
    assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    cfg = MockConfig(
        mode="timed", ttft="const:0.01", itl="const:0.002", output_tokens="const:8"
    )
    with MockProcess(cfg, workers=2) as url:
        yield url


def test_a_server_run_on_two_actors_is_the_same_run_folder_plus_actor_stats(
    cluster: None, mock_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = [
        "run", "--sut", "openai", "--url", mock_url, "--model", "m",
        "--benchmark", "llama2-70b", "--target-qps", "200", "--min-duration", "3s",
        "--performance-sample-count", "64", "--total-sample-count", "64",
        "--ray", "local", "--ray-actors", "2",
        "--output-dir", str(out), "--store", str(tmp_path / "store.db"),
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    doc = json.loads((out / "run.json").read_text())
    metrics = doc["metrics"]
    # VALID, unless this machine's other work made the client late (the run
    # then fails only latency bounds or its own connects, and says it was
    # client-bound).
    if result.exit_code == 3:
        assert doc["client"]["client_bound"], result.output
        assert only_latency_reasons(doc["verdict"]["reasons"]), result.output
    else:
        assert result.exit_code == 0, result.output
        assert doc["verdict"]["result"] == "VALID"
        assert metrics["samples_failed"] == 0
    # Every sample accounted for: issued = completed + failed, none missing.
    done = metrics["samples_completed"] + metrics["samples_failed"]
    assert done == metrics["samples_issued"] >= 600
    stats = doc["sut"]["stats"]
    assert (stats["transport"], stats["workers"]) == ("actor", 2)
    counts = [c["requests"] for c in stats["clients"]]
    assert sum(counts) == metrics["samples_issued"] and abs(counts[0] - counts[1]) <= 1
    for client in stats["clients"]:
        clock = client["clock"]
        assert {
            "offset_ns",
            "uncertainty_ns",
            "end_offset_ns",
            "end_uncertainty_ns",
        } <= set(clock)
        assert clock["uncertainty_ns"] > 0 and clock["end_uncertainty_ns"] > 0
        assert clock["shared_clock"] is True  # one machine, one kernel clock
    assert doc["client"]["clock_error_ns"] == 0
    assert (out / "records.npz").exists() and (out / "mlperf_log_summary.txt").exists()


def _two_actors(url: str) -> RayHttpSUT:
    prompts = SyntheticPrompts(64, output_tokens=4)
    return RayHttpSUT(
        OpenAIConfig(url=url, model="m"), prompts, address="local", actors=2
    )


def test_a_closed_loop_on_two_actors_keeps_their_slots_and_stamps_real_sends(
    cluster: None, mock_url: str
) -> None:
    with _two_actors(mock_url) as sut:
        result = run_load(sut, LoadSpec(concurrency=8, requests=400), sample_count=64)
        stats = sut.stats()
        ids, sent = sut.send_times()
    phase = result.phase
    assert result.metrics.completed == 400
    counts = [c["requests"] for c in stats["clients"]]
    assert sum(counts) == 400 and min(counts) >= 40  # both actors took a share
    # Each issue time is the actor's send (its "i" event), never the hand-over.
    issued = phase.records.issued_ns[:400]
    assert np.array_equal(phase.query_origin_ns[:400], issued)
    order = np.argsort(ids)
    assert np.all(sent[order] >= issued[ids[order]])


def test_an_actor_killed_mid_run_ends_it_invalid_with_the_actor_error(
    cluster: None, mock_url: str
) -> None:
    with _two_actors(mock_url) as sut:
        victim = int(sut.identities[1]["pid"])
        killed: list[float] = []

        def kill() -> None:
            killed.append(time.monotonic())
            os.kill(victim, signal.SIGKILL)

        timer = threading.Timer(2.0, kill)
        timer.start()
        spec = LoadSpec(mode="rate", rate=100.0, requests=3000)  # 30 s of arrivals
        result = run_load(sut, spec, sample_count=64)
        ended = time.monotonic()
        timer.join()
        stats = sut.stats()
    errors = list(result.phase.errors)
    assert any("remote client lost: actor 1 died" in e for e in errors), errors
    assert stats["clients"][1]["lost"]
    assert result.phase.samples_issued < 3000
    assert ended - killed[0] < 15.0  # within 5 s on a quiet machine; 28 s if it waited


class _BreaksOnLoad:
    def prompt(self, index: int) -> Prompt:
        return Prompt(text="x")

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Unpickling calls int("prompt file vanished"): a stdlib call, importable anywhere.
        return (int, ("prompt file vanished",))


def test_an_actor_that_fails_at_start_up_is_an_error_not_a_hang(cluster: None) -> None:
    config = OpenAIConfig(url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(
        SUTError,
        match=r"Ray actor 0 failed to start: .*ValueError: .*prompt file vanished",
    ):
        RayHttpSUT(config, _BreaksOnLoad(), address="local", actors=1)


def test_ray_auto_joins_the_cluster_another_process_started(
    cluster: None, mock_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = [
        sys.executable, "-m", "infermeter", "run", "--sut", "openai", "--url", mock_url,
        "--model", "m", "--target-qps", "100", "--min-duration", "1s",
        "--min-query-count", "100", "--performance-sample-count", "64",
        "--total-sample-count", "64", "--ray", "auto", "--ray-actors", "2",
        "--output-dir", str(out), "--store", str(tmp_path / "store.db"),
    ]  # fmt: skip
    result = subprocess.run(args, capture_output=True, text=True, timeout=240)
    assert result.returncode in (0, 3), result.stderr[-2000:]
    doc = json.loads((out / "run.json").read_text())
    stats = doc["sut"]["stats"]
    assert (stats["transport"], stats["workers"]) == ("actor", 2)
    # ``auto`` never starts a cluster: the run found this process's (the only one).
    assert doc["metrics"]["samples_completed"] == doc["metrics"]["samples_issued"] > 0
