"""diff: bootstrap intervals and verdicts on synthetic run folders."""

from __future__ import annotations

import numpy as np
import pytest
from tests.results_fixtures import write_run

from infermeter.errors import ConfigError
from infermeter.results.diff import EXIT_WORSE, NO_DIFFERENCE, diff_runs, window_rates
from infermeter.results.runfolder import load_run


def _run(tmp_path, name, **kwargs):
    return load_run(write_run(tmp_path / name, n=1500, **kwargs))


def test_same_sut_twice_is_no_significant_difference(tmp_path):
    result = diff_runs(_run(tmp_path, "a", seed=1), _run(tmp_path, "b", seed=2))
    assert result.verdict == NO_DIFFERENCE and result.exit_code == 0
    for metric in result.metrics:
        assert metric.low <= 0.02 and metric.high >= -0.02, metric


def test_a_run_against_itself_and_constant_latency(tmp_path):
    a = _run(tmp_path, "a", seed=3, jitter=0.0)
    result = diff_runs(a, a)
    assert result.verdict == NO_DIFFERENCE
    assert all(m.change == 0 for m in result.metrics)
    p99 = next(m for m in result.metrics if m.name == "latency p99")
    assert p99.low == p99.high == 0  # a deterministic SUT: nothing to resample


def test_ten_percent_slower_sut_is_worse_with_its_interval(tmp_path):
    base = _run(tmp_path, "a", seed=1)
    slow = _run(tmp_path, "b", seed=2, latency_ms=220.0)  # +10 %
    result = diff_runs(base, slow)
    assert result.verdict == "worse" and result.exit_code == EXIT_WORSE
    p50 = next(m for m in result.metrics if m.name == "latency p50")
    assert p50.verdict == "worse"
    assert 0.02 < p50.low < 0.10 < p50.high < 0.2
    assert p50.change == pytest.approx(0.10, abs=0.03)
    faster = diff_runs(slow, base)
    assert faster.verdict == "better" and faster.exit_code == 0


def test_non_token_runs_have_no_ttft(tmp_path):
    a = _run(tmp_path, "a", tokens=False, benchmark="resnet")
    result = diff_runs(a, _run(tmp_path, "b", tokens=False, benchmark="resnet", seed=4))
    names = [m.name for m in result.metrics]
    assert names[0] == "throughput" and result.metrics[0].unit == "samples/s"
    assert not any(n.startswith("TTFT") for n in names)


def test_mixed_runs_and_bad_confidence_are_config_errors(tmp_path):
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b", tokens=False)
    with pytest.raises(ConfigError, match="tokens"):
        diff_runs(a, b)
    with pytest.raises(ConfigError, match="--confidence"):
        diff_runs(a, a, confidence=1.5)
    # These used to end in "internal error" (TypeError, ValueError).
    for few in (0, -1, 99):
        with pytest.raises(
            ConfigError, match=rf"--resamples must be >= 100 .* .got {few};"
        ):
            diff_runs(a, a, resamples=few)
    with pytest.raises(ConfigError, match=r"--threshold must be >= 0"):
        diff_runs(a, a, threshold=-0.1)


def test_window_rates_sum_to_the_total():
    times = np.array([1e9, 2e9, 3e9, 4e9])
    rates = window_rates(times, np.ones(4), 4)
    assert rates.sum() * 1.0 == pytest.approx(4.0)
