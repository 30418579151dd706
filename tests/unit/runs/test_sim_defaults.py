"""The default run's settings for the ``sim`` SUT: published rate, short, MLPerf-like."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.loadgen.settings import Scenario
from infermeter.runs.request import RunRequest
from infermeter.runs.sim_endpoint import (
    DEFAULT_MIN_DURATION_MS,
    DEFAULT_SAMPLES,
    published_server_rows,
    sim_config,
    with_sim_defaults,
)
from infermeter.workloads.datasets.factory import DatasetOptions
from infermeter.workloads.datasets.lengths import LengthSpec


def test_the_default_request_is_a_short_run_at_the_published_h100_rate() -> None:
    request = RunRequest()
    assert request.sut == "sim" and request.scenario is Scenario.SERVER
    filled = with_sim_defaults(request, "llama2-70b")
    # The lowest published 8x H100 SXM Server rate: v4.1-0043, 21,605.8 tok/s,
    # at 294.45 output tokens per sample (v4.1-0031 is 23,132.8).
    assert filled.target_qps == pytest.approx(21605.8 / 294.45)
    assert filled.overrides["min_duration_ms"] == DEFAULT_MIN_DURATION_MS
    assert filled.total_sample_count == DEFAULT_SAMPLES
    assert filled.sut_options == {"accelerator": "h100-sxm", "count": "8"}
    rng = np.random.default_rng(0)
    opts = filled.dataset_options
    assert opts.output_len is not None and opts.input_len is not None
    out = [opts.output_len.draw(rng) for _ in range(4000)]
    assert max(out) <= 1024 and 270 < float(np.mean(out)) < 300
    prompts = [opts.input_len.draw(rng) for _ in range(4000)]
    assert 200 < float(np.mean(prompts)) < 250  # the dataset's mean prompt: 222.3


def test_what_the_user_set_is_kept() -> None:
    request = RunRequest(
        target_qps=5.0,
        overrides={"min_duration_ms": 600_000},
        total_sample_count=24,
        sut_options={"accelerator": "h200", "precision": "fp8"},
        dataset_options=DatasetOptions(output_len=LengthSpec("fixed", a=7)),
    )
    filled = with_sim_defaults(request, "llama2-70b")
    assert filled.target_qps == 5.0 and filled.total_sample_count == 24
    assert filled.overrides == {"min_duration_ms": 600_000}
    assert filled.dataset_options.output_len == LengthSpec("fixed", a=7)
    assert filled.sut_options["accelerator"] == "h200"
    assert filled.sut_options["precision"] == "fp8"


def test_other_systems_take_their_own_published_rate() -> None:
    h200 = with_sim_defaults(
        RunRequest(sut_options={"accelerator": "h200"}), "llama2-70b"
    )
    lowest = min(r.value for r in published_server_rows("h200", 8, "llama2-70b"))
    assert h200.target_qps == pytest.approx(lowest / 294.45)
    # No published row (4x H100): mlperf.conf's target stays.
    four = with_sim_defaults(RunRequest(sut_options={"count": "4"}), "llama2-70b")
    assert four.target_qps is None


def test_other_suts_and_scenarios_are_left_alone() -> None:
    fake = RunRequest(sut="fake")
    assert with_sim_defaults(fake, "llama2-70b") is fake
    offline = RunRequest(scenario=Scenario.OFFLINE)
    named = with_sim_defaults(offline, "llama2-70b")
    # Only the simulated system is named (for comparisons): nothing else changes.
    assert named == dataclasses.replace(
        offline, sut_options={"accelerator": "h100-sxm", "count": "8"}
    )


def test_non_llm_benchmarks_and_bad_numbers_are_one_line_errors() -> None:
    with pytest.raises(ConfigError, match=r"simulates LLM benchmarks only .* --sut"):
        sim_config({}, "resnet50")
    with pytest.raises(ConfigError, match="count='eight' is not a number"):
        sim_config({"count": "eight"}, "llama2-70b")
