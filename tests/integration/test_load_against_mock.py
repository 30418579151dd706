"""Load points against the timed mock: counts, orderings and bounds no delay can break.

How close the measured figures come to the configured ones is a benchmark
(benchmarks/client/mock_fidelity.py): on a busy machine the server's sleeps and the
client's wake-ups both run late. Here: nothing is measured faster than the
server can answer, and a first token is timed at the first chunk, not the last.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from infermeter.runs.endpoints import result_summary, write_json
from infermeter.runs.load import LoadSpec, run_load
from infermeter.runs.trace import Trace, TracePrompts
from infermeter.servers.faults import FaultConfig
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import OpenAIConfig, Timeouts
from infermeter.suts.prompts import SyntheticPrompts

pytestmark = pytest.mark.integration

TTFT_S = 0.200
ITL_S = 0.020
OUT = 20
TIMER_S = 0.001  # the mock's timers fire up to 1 ms early (libuv's resolution)


def _sut(url: str, **kw: object) -> OpenAIHttpSUT:
    prompts = SyntheticPrompts(16, input_tokens=8, output_tokens=OUT)
    cfg = OpenAIConfig(url=url, model="m", **kw)  # type: ignore[arg-type]
    return OpenAIHttpSUT(cfg, prompts)


def test_measured_ttft_tpot_tps_are_bounded_by_the_timed_mock() -> None:
    timed = MockConfig(mode="timed", ttft=f"const:{TTFT_S}", itl=f"const:{ITL_S}")
    spec = LoadSpec(mode="concurrency", concurrency=8, requests=32, warmup_requests=8)
    # A server thread here shares the GIL and may add up to a switch interval
    # (5 ms) to a first token: delays only, which none of the bounds below
    # rests on (how close the figures come is the fidelity benchmark's).
    with MockServer(timed) as url, _sut(url) as sut:
        result = run_load(sut, spec, sample_count=16)
    m = result.metrics
    assert (m.completed, m.failed, m.issued) == (32, 0, 32)
    assert (m.n_tokens == OUT).all()
    # The server waits TTFT before the first token: no first token comes sooner,
    # and each is timed at the first chunk, well before the stream's end.
    ttft_s = m.ttft_ns / 1e9
    assert (ttft_s >= TTFT_S - TIMER_S).all()
    assert m.ttft_ns.shape == m.latency_ns.shape and (m.ttft_ns < m.latency_ns).all()
    assert (m.latency_ns / 1e9 >= TTFT_S + (OUT - 1) * ITL_S - TIMER_S).all()
    # TPOT divides the span from the first chunk to the last by OUT - 1 (a late
    # first chunk shortens the span, so TPOT has no lower bound here).
    first_ns = m.latency_ns - m.ttft_ns
    assert np.array_equal(m.tpot_ns, first_ns // (OUT - 1))
    # Each of 8 users produces OUT tokens every TTFT + (OUT - 1) * ITL seconds at
    # best: delays only lower the system's rate.
    per_request_s = TTFT_S + (OUT - 1) * ITL_S
    assert 0 < m.system_tps <= 8 * OUT / per_request_s * 1.02
    assert m.tps_per_user is not None and m.tps_per_user > 0
    assert result.sut_stats["requests"] == 32  # warm-up left out
    assert result.certification.requests == 32


def test_poisson_rate_point_and_its_result_summary(tmp_path: Path) -> None:
    timed = MockConfig(mode="timed", ttft="const:0.02", itl="const:0.002")
    spec = LoadSpec(mode="rate", rate=200.0, pattern="poisson", duration_s=0.5, seed=3)
    with MockServer(timed) as url, _sut(url) as sut:
        result = run_load(sut, spec, sample_count=16)
    m = result.metrics
    assert m.issued == 100 and m.completed == 100
    assert m.target_rate == 200.0
    # 20 ms to the first of 20 tokens 2 ms apart: never sooner, and not the last.
    assert m.ttft_p90_ms is not None and m.ttft_p90_ms >= 20.0 - 1000 * TIMER_S
    assert m.ttft_ns.shape == m.latency_ns.shape and (m.ttft_ns < m.latency_ns).all()
    summary = result_summary(m, started_at=result.started_at, run_config={"rate": 200})
    path = write_json(tmp_path / "performance" / "result_summary.json", summary)
    data = json.loads(path.read_text())
    assert data["n_samples_issued"] == 100 and data["complete"] is True
    assert set(data["ttft"]) >= {
        "total",
        "min",
        "max",
        "avg",
        "std_dev",
        "median",
        "percentiles",
        "histogram",
    }
    assert data["ttft"]["percentiles"]["90"] == pytest.approx(
        m.ttft_p90_ms * 1e6, rel=1e-6
    )
    assert data["infermeter"]["label"] == "infermeter results (unverified)"


def test_rate_with_concurrency_cap_queues_in_the_client() -> None:
    timed = MockConfig(mode="timed", ttft="const:0.05", itl="const:0.001")
    spec = LoadSpec(mode="rate", rate=400.0, pattern="constant", requests=40)
    with MockServer(timed) as url, _sut(url, max_in_flight=2) as sut:
        result = run_load(sut, spec, sample_count=16)
    # Two at a time, each ~70 ms: most requests wait, and the wait shows.
    assert result.metrics.completed == 40
    assert result.certification.send_lateness_ns["p90"] > 100_000_000
    assert result.certification.client_bound


def test_trace_replay_follows_timestamps() -> None:
    arrivals = np.array([0, 50, 100, 300], dtype=np.int64) * 1_000_000
    trace = Trace(
        arrivals, np.array([4, 8, 4, 8]), np.array([3, 5, 3, 5]), ((1,), (1, 2), (), ())
    )
    spec = LoadSpec(mode="trace", trace=trace)
    prompts = TracePrompts(trace, block_size=4)
    cfg = OpenAIConfig(url="http://127.0.0.1:1/v1", model="m")
    with MockServer(MockConfig(mode="echo")) as url:
        cfg = OpenAIConfig(url=url, model="m", ignore_eos=True)
        with OpenAIHttpSUT(cfg, prompts) as sut:
            result = run_load(sut, spec, sample_count=len(trace))
    issued = result.phase.records.issued_ns[:4] - result.phase.start_ns
    # Each request leaves at its timestamp, never before (delays only add).
    assert (issued >= arrivals).all()
    assert (np.diff(issued) > 0).all()
    assert result.phase.records.n_tokens[:4].tolist() == [3, 5, 3, 5]


def test_fault_mix_every_sample_accounted_for() -> None:
    faults = FaultConfig(
        error_rate=0.1,
        reset_rate=0.1,
        stall_rate=0.05,
        malformed_rate=0.1,
        slow_first_byte_rate=0.1,
        slow_first_byte_s=0.05,
    )
    cfg = MockConfig(
        mode="faults", ttft="const:0.005", itl="const:0.001", faults=faults, seed=5
    )
    spec = LoadSpec(mode="concurrency", concurrency=16, requests=200)
    with MockServer(cfg) as url, _sut(url, timeouts=Timeouts(total_s=0.5)) as sut:
        result = run_load(sut, spec, sample_count=16)
    m = result.metrics
    assert m.completed + m.failed == m.issued == 200
    assert sum(m.failure_reasons.values()) == m.failed
    kinds = " ".join(m.failure_reasons)
    for expected in ("HTTP 500", "connection reset", "malformed", "timeout"):
        assert expected in kinds
    # About 35 % of 200 fail (slow first byte still completes).
    assert 45 <= m.failed <= 100


def test_server_restart_mid_run_the_run_completes_and_counts_add_up() -> None:
    import threading

    srv = MockServer(MockConfig(mode="timed", ttft="const:0.01", itl="const:0.005"))
    url = srv.start()
    restart = threading.Timer(0.3, srv.restart)
    # 1.5 s of arrivals, the restart at 0.3 s: requests before, during and after.
    spec = LoadSpec(mode="rate", rate=100.0, pattern="constant", requests=150)
    with _sut(url, timeouts=Timeouts(connect_s=2, total_s=5)) as sut:
        restart.start()
        result = run_load(sut, spec, sample_count=16)
    restart.join()
    srv.stop()
    m = result.metrics
    assert m.completed + m.failed == m.issued == 150
    # Requests sent while nothing listened fail; those before and after complete.
    assert m.failed > 0 and m.completed > 0
    rec = result.phase.records
    ok = rec.status[:150] == 0
    issued = rec.issued_ns[:150]
    assert issued[ok].max() > issued[~ok].max()  # the server came back
    assert issued[ok].min() < issued[~ok].min()  # and had answered before
    assert sum(m.failure_reasons.values()) == m.failed
    assert all("connect" in reason for reason in m.failure_reasons), m.failure_reasons


def test_random_distributions_measured_within_2_percent_of_the_draws() -> None:
    from infermeter.servers.timing import Distribution, DistributionTiming, MockRequest

    ttft, itl, out, warm, n = "uniform:0.16,0.24", "normal:0.02,0.004", 8, 16, 128
    cfg = MockConfig(mode="timed", ttft=ttft, itl=itl, seed=11)
    spec = LoadSpec(
        mode="concurrency", concurrency=16, requests=n, warmup_requests=warm
    )
    prompts = SyntheticPrompts(16, input_tokens=8, output_tokens=out)
    with (
        MockServer(cfg) as url,
        OpenAIHttpSUT(OpenAIConfig(url=url, model="m"), prompts) as sut,
    ):
        result = run_load(sut, spec, sample_count=16)
    # The server draws one plan per request in arrival order from its seed: replay
    # the draws and compare the means of the measured series with them.
    timing = DistributionTiming(
        ttft_s=Distribution.parse(ttft), itl_s=Distribution.parse(itl), seed=11
    )
    plans = [timing.plan(MockRequest(8, out)) for _ in range(warm + n)][warm:]
    drawn_ttft = np.mean([p.ttft_s for p in plans])
    drawn_e2e = np.mean(
        [
            p.ttft_s + (float(p.gaps_s.sum()) if p.gaps_s is not None else 0.0)
            for p in plans
        ]
    )
    m = result.metrics
    assert m.completed == n
    # Each first token comes no sooner than its drawn TTFT (so the means
    # follow), and before its stream's end (first chunk, not last).
    assert np.mean(m.ttft_ns) / 1e9 >= drawn_ttft - TIMER_S
    assert (m.ttft_ns < m.latency_ns).all()
    assert np.mean(m.latency_ns) / 1e9 >= drawn_e2e - TIMER_S
