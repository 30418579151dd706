"""serve-sim on 127.0.0.1 port 0: clients measure the simulator's TTFT and TPOT."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.loadgen.settings import Scenario
from infermeter.perfmodel.verdict import percentile_ns
from infermeter.runs.request import RunRequest
from infermeter.runs.run import execute
from infermeter.servers.sim import RID_HEADER, SimConfig, SimServer
from infermeter.workloads.datasets.factory import DatasetOptions
from infermeter.workloads.datasets.lengths import LengthSpec

pytestmark = pytest.mark.integration
MS = 1_000_000


@pytest.fixture
def server() -> Iterator[SimServer]:
    srv = SimServer(SimConfig(accelerator="h100-sxm", count=8, chunk_ms=20))
    srv.start()
    yield srv
    srv.stop()


async def _measure(
    session: aiohttp.ClientSession, url: str, words: int, max_tokens: int, delay: float
) -> tuple[int, int, int, int, int]:
    """(rid, ttft ns, latency ns, chunks, usage tokens) measured by the client."""
    await asyncio.sleep(delay)
    body = {
        "model": "llama2-70b",
        "prompt": " ".join(["word"] * words),
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    start = time.monotonic_ns()
    first, chunks, usage = 0, 0, -1
    async with session.post(url + "/completions", json=body) as resp:
        assert resp.status == 200
        rid = int(resp.headers[RID_HEADER])
        async for line in resp.content:
            if not line.startswith(b"data: {"):
                continue
            obj = json.loads(line[6:])
            if obj.get("usage"):
                usage = obj["usage"]["completion_tokens"]
            elif obj["choices"] and obj["choices"][0]["text"]:
                first = first or time.monotonic_ns()
                chunks += 1
    return rid, first - start, time.monotonic_ns() - start, chunks, usage


async def _burst(url: str, n: int) -> list[tuple[int, int, int, int, int]]:
    rng = np.random.default_rng(3)
    delays = np.cumsum(rng.exponential(1 / 40.0, n))  # ~40 requests/s
    words = rng.integers(100, 1500, n)
    tokens = rng.integers(2, 60, n)
    async with aiohttp.ClientSession() as session:
        return await asyncio.gather(
            *(
                _measure(session, url, int(w), int(t), float(d))
                for w, t, d in zip(words, tokens, delays, strict=True)
            )
        )


def test_streamed_ttft_and_tpot_equal_the_simulators(server: SimServer) -> None:
    results = asyncio.run(_burst(server.url, 60))
    sim = server.app.sim
    for rid, ttft, latency, chunks, usage in results:
        arrival, first, done = sim.timing(rid)
        n = int(sim.cols["osl"][rid])
        assert usage == n and chunks >= min(n, 2)
        # The client's clock starts before the request crosses loopback and stops
        # after the chunk does: the server never sends early.
        assert ttft >= first - arrival
        assert latency >= done - arrival
        # Streamed, not buffered: the first chunk is read before the last.
        if n >= 2:
            assert ttft < latency
    stats = server.app.stats()
    assert stats["requests"] == stats["completed"] == 60 and stats["in_flight"] == 0


def test_non_streaming_chat_and_models(server: SimServer) -> None:
    async def go() -> tuple[dict[str, object], dict[str, object], int, int]:
        body = {
            "model": "llama2-70b",
            "messages": [{"role": "user", "content": "tell me a story " * 50}],
            "max_tokens": 40,
        }
        async with aiohttp.ClientSession() as session:
            start = time.monotonic_ns()
            async with session.post(server.url + "/chat/completions", json=body) as r:
                answer = await r.json()
                rid = int(r.headers[RID_HEADER])
            latency = time.monotonic_ns() - start
            async with session.get(server.url + "/models") as r:
                models = await r.json()
        return answer, models, rid, latency

    answer, models, rid, latency = asyncio.run(go())
    arrival, _, done = server.app.sim.timing(rid)
    assert latency >= done - arrival  # the client waits at least the simulated time
    assert answer["usage"] == {  # type: ignore[comparison-overlap]
        "prompt_tokens": 200,
        "completion_tokens": 40,
        "total_tokens": 240,
    }
    assert answer["choices"][0]["message"]["content"] == "tok " * 40  # type: ignore[index]
    assert models["data"][0]["id"] == "llama2-70b"  # type: ignore[index]


def test_bad_requests_get_one_line_400s(server: SimServer) -> None:
    async def post(body: bytes) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(server.url + "/completions", data=body) as r,
        ):
            return r.status, (await r.json())["error"]["message"]

    status, message = asyncio.run(post(b"{not json"))
    assert status == 400 and message == "request body is not JSON"
    huge = json.dumps({"prompt": "w " * 500_000, "max_tokens": 5}).encode()
    status, message = asyncio.run(post(huge))
    assert status == 400 and "exceeds one replica's KV cache" in message
    assert "\n" not in message and server.app.stats()["bad_requests"] == 2


def test_bad_configs_fail_before_serving() -> None:
    with pytest.raises(ConfigError, match=r"Unknown accelerator 'h300'\. Known: "):
        SimServer(SimConfig(accelerator="h300"))
    with pytest.raises(ConfigError, match=r"needs 138.1 GB .* offers 72.0 GB usable"):
        SimServer(SimConfig(count=1, precision="fp16", tp=1))
    with pytest.raises(ConfigError, match="--chunk-ms must be >= 1"):
        SimServer(SimConfig(chunk_ms=0))


def test_a_server_run_through_the_openai_sut_measures_the_simulator(
    server: SimServer, tmp_path: Path
) -> None:
    lengths = DatasetOptions(
        input_len=LengthSpec("lognormal", a=400, b=0.5, max_len=1500),
        output_len=LengthSpec("uniform", a=8, b=48),
    )
    report = execute(
        RunRequest(
            scenario=Scenario.SERVER,
            sut="openai",
            sut_options={"url": server.url, "model": "llama2-70b"},
            target_qps=30.0,
            overrides={"min_duration_ms": 1000, "min_query_count": 40},
            dataset_options=lengths,
            total_sample_count=64,
            output_dir=tmp_path / "run",
            index=False,
            preflight=False,  # its probe would be one more request for the simulator
        )
    )
    # (Too short for TTFT early stopping to pass: the timings are the point here.)
    metrics = report.document["metrics"]
    sim = server.app.sim
    n = sim.cols.n
    assert n == metrics["samples_completed"]
    arrival, first, done = (sim.cols[k][:n] for k in ("arrival", "first", "done"))
    osl = sim.cols["osl"][:n]
    ttft = first - arrival
    tpot = (done - first) // np.maximum(osl - 1, 1)
    # The client times from the scheduled send (no later than the server's
    # arrival) to the chunk's receipt (no sooner than the simulator's time): each
    # sample's TTFT and latency are at least the simulator's, so every percentile
    # is. Delays only add, so the bounds above are the simulator's stream end.
    for p, name in ((0.5, "p50"), (0.99, "p99")):
        sim_ttft, sim_e2e = percentile_ns(ttft, p), percentile_ns(done - arrival, p)
        assert sim_ttft <= metrics["ttft_ns"][name] < metrics["latency_ns"][name]
        assert metrics["latency_ns"][name] >= sim_e2e
    assert metrics["tpot_ns"]["p50"] > 0 and percentile_ns(tpot, 0.5) > 0
