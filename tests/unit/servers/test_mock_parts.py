"""Mock server pieces: timings, distributions, fault picking, request parsing."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.servers.faults import Fault, FaultConfig, FaultPicker
from infermeter.servers.mock import MockConfig
from infermeter.servers.mock_stream import parse_request
from infermeter.servers.timing import (
    Distribution,
    DistributionTiming,
    InstantTiming,
    MockRequest,
    output_length,
)


@pytest.mark.parametrize(
    ("spec", "mean"),
    [
        ("const:0.2", 0.2),
        ("exp:0.1", 0.1),
        ("uniform:0.1,0.3", 0.2),
        ("normal:0.5,0.05", 0.5),
        ("lognormal:0.2,0.1", 0.2),
    ],
)
def test_distribution_means(spec: str, mean: float) -> None:
    dist = Distribution.parse(spec)
    draws = dist.sample(np.random.default_rng(0), 100_000)
    assert dist.mean == pytest.approx(mean)
    assert float(draws.mean()) == pytest.approx(mean, rel=0.01)
    assert float(draws.min()) >= 0.0


@pytest.mark.parametrize(
    "bad", ["poisson:1", "const:", "normal:1", "uniform:a,b", "exp:-1"]
)
def test_bad_distribution_names_the_forms(bad: str) -> None:
    with pytest.raises(ConfigError, match="normal:MEAN,STD"):
        Distribution.parse(bad)


def test_output_length_rules() -> None:
    req = MockRequest(prompt_tokens=3, max_tokens=10)
    assert output_length(req, 4) == 4
    assert output_length(req, 40) == 10
    assert output_length(MockRequest(3, 10, ignore_eos=True), 4) == 10
    assert output_length(MockRequest(3, 10, min_tokens=7), 4) == 7
    assert InstantTiming().plan(req).n_tokens == 10


def test_distribution_timing_is_seeded_and_shaped() -> None:
    def plans(seed: int) -> list[tuple[int, float, list[float]]]:
        timing = DistributionTiming(
            ttft_s=Distribution.parse("uniform:0.1,0.2"),
            itl_s=Distribution.parse("exp:0.01"),
            output_tokens=Distribution.parse("uniform:5,50"),
            seed=seed,
        )
        out = []
        for _ in range(20):
            plan = timing.plan(MockRequest(prompt_tokens=1, max_tokens=30))
            assert plan.gaps_s is not None and plan.gaps_s.shape == (plan.n_tokens - 1,)
            out.append((plan.n_tokens, plan.ttft_s, plan.gaps_s.tolist()))
        return out

    first = plans(3)
    assert first == plans(3) and first != plans(4)
    assert all(5 <= n <= 30 and 0.1 <= t <= 0.2 for n, t, _ in first)


def test_fault_picker_frequencies_and_validation() -> None:
    config = FaultConfig(error_rate=0.2, reset_rate=0.1, malformed_rate=0.1)
    picker = FaultPicker(config, seed=1)
    counts = Counter(picker.pick() for _ in range(20_000))
    assert counts[Fault.ERROR] / 20_000 == pytest.approx(0.2, abs=0.01)
    assert counts[Fault.RESET] / 20_000 == pytest.approx(0.1, abs=0.01)
    assert counts[Fault.NONE] / 20_000 == pytest.approx(0.6, abs=0.01)
    assert counts[Fault.STALL] == 0
    with pytest.raises(ConfigError, match=r"add up to 1\.2"):
        FaultConfig(error_rate=0.6, reset_rate=0.6).validate()
    with pytest.raises(ConfigError, match="in \\[0, 1\\]"):
        FaultConfig(stall_rate=-0.1).validate()


def test_mock_config_rejects_unknown_mode() -> None:
    with pytest.raises(ConfigError, match="Known modes: echo, max-throughput"):
        MockConfig(mode="fast").validate()


def test_parse_request_reads_shaping_fields() -> None:
    body = {
        "model": "m",
        "prompt": [1, 2, 3, 4],
        "max_tokens": 9,
        "min_tokens": 9,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    parsed = parse_request(json.dumps(body).encode(), chat=False, in_flight=2)
    assert parsed.mock == MockRequest(4, 9, 9, True, True, 2)
    assert parsed.include_usage and not parsed.chat
    chat = {
        "messages": [{"role": "user", "content": "a b"}],
        "max_completion_tokens": 3,
    }
    parsed = parse_request(json.dumps(chat).encode(), chat=True, in_flight=0)
    assert (parsed.words, parsed.mock.max_tokens, parsed.mock.stream) == (
        ("a", "b"),
        3,
        False,
    )
    with pytest.raises(ValueError, match="messages"):
        parse_request(b'{"prompt": "x"}', chat=True, in_flight=0)
    with pytest.raises(ValueError, match="not JSON"):
        parse_request(b"{", chat=False, in_flight=0)
