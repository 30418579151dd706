"""A finite MLPerf run's tokens/s against the steady state (finite_run)."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.perfmodel.finite_run import (
    Operating,
    lengths,
    offline_samples,
    reported,
    server_span_s,
    simulated_offline_share,
)
from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import SystemSpec, operating_point

EFF = Efficiency()


def _operating(part: str, count: int, bench: str, prec: str, scen: str) -> Operating:
    spec = SystemSpec(get_accelerator(part), count, get_model(bench), prec)
    return operating_point(spec, get_workload(bench), scen, EFF)


def test_sample_counts_and_spans_follow_loadgen() -> None:
    ds, llama = get_workload("deepseek-r1"), get_workload("llama2-70b")
    # 1.1 x 600 s x 7.85 QPS = 5,181 samples, padded to two sets of 4,388.
    assert offline_samples(ds, np.asarray([7.85]))[0] == 8776
    # Below one set: the set itself.
    assert offline_samples(ds, np.asarray([1.0]))[0] == 4388
    assert offline_samples(llama, np.asarray([344.0]))[0] == 10 * 24576
    # One set at 3.58 QPS spans 1,225.7 s; at 43 QPS a set is 102 s: six sets.
    assert server_span_s(ds, np.asarray([3.58]))[0] == pytest.approx(4388 / 3.58)
    assert server_span_s(ds, np.asarray([43.0]))[0] == pytest.approx(6 * 4388 / 43)


def test_length_distribution_keeps_the_mean_and_caps_the_tail() -> None:
    ds = get_workload("deepseek-r1")
    dist = lengths(ds)
    mean = float(np.sum((dist.survival[1:] + dist.survival[:-1]) / 2 * np.diff(dist.u)))
    # The cap removes the tail above 32,768 tokens: a little under the mean.
    assert 0.95 * ds.osl_mean < mean < ds.osl_mean
    assert dist.residual[0] == 1.0 and dist.residual[-1] == 0.0
    assert np.all(np.diff(dist.residual) <= 0)
    assert dist.last.max() <= ds.osl_max


def test_offline_drain_matches_a_longest_first_schedule() -> None:
    # DeepSeek-R1 on 8x B200: about 1 % of the reference outputs run to the
    # 32,768-token cap, longer than the run's full-batch steps.
    wl = get_workload("deepseek-r1")
    op = _operating("b200", 8, "deepseek-r1", "fp4", "Offline")
    assert op.replicas == 1
    share = reported(op, wl, "Offline")[0] / op.tokens_per_s[0]
    assert share < 0.9
    simulated = simulated_offline_share(op, wl)
    assert share == pytest.approx(simulated, rel=0.05)


def test_short_outputs_lose_nothing_offline_and_little_in_server() -> None:
    wl = get_workload("llama2-70b")
    off = _operating("h200-sxm", 8, "llama2-70b", "fp8", "Offline")
    assert reported(off, wl, "Offline")[0] == pytest.approx(off.tokens_per_s[0])
    srv = _operating("h200-sxm", 8, "llama2-70b", "fp8", "Server")
    share = reported(srv, wl, "Server")[0] / srv.tokens_per_s[0]
    # The last of 24,576-query sets decodes 294 tokens after a >= 600 s schedule.
    assert 0.95 < share < 1.0


def test_server_tail_grows_with_the_output_and_shrinks_with_the_run() -> None:
    ds = get_workload("deepseek-r1")
    op = _operating("b200", 8, "deepseek-r1", "fp4", "Server")
    share = reported(op, ds, "Server")[0] / op.tokens_per_s[0]
    assert 0.7 < share < 0.95

    # At a quarter of its rate one set of 4,388 queries spans well over 600 s; at
    # twice its rate the run is whole sets of about 600 s, so the same last query
    # weighs more.
    def share_at(k: float) -> float:
        f = Operating(
            op.dep,
            op.eff,
            op.speed,
            op.tokens_per_s * k,
            op.batch,
            op.step_s,
            op.replicas,
        )
        return float(reported(f, ds, "Server")[0] / f.tokens_per_s[0])

    assert share_at(2.0) < share_at(0.25)
