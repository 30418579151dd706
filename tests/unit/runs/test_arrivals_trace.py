"""Arrival generators and trace replay."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infermeter.errors import ConfigError, DatasetError
from infermeter.runs.arrivals import arrival_times, count_for
from infermeter.runs.trace import TracePrompts, load_trace


@pytest.mark.parametrize("pattern", ["constant", "poisson", "gamma"])
def test_mean_rate_and_seeding(pattern: str) -> None:
    times = arrival_times(pattern, 1000.0, 20_000, seed=7, burstiness=0.5)
    assert times.dtype == np.int64 and np.all(np.diff(times) >= 0)
    rate = len(times) / (times[-1] / 1e9)
    assert rate == pytest.approx(1000.0, rel=0.03)
    again = arrival_times(pattern, 1000.0, 20_000, seed=7, burstiness=0.5)
    assert np.array_equal(times, again)


def test_constant_is_evenly_spaced() -> None:
    times = arrival_times("constant", 4.0, 4)
    assert times.tolist() == [250_000_000, 500_000_000, 750_000_000, 1_000_000_000]


def test_burstiness_controls_gap_spread() -> None:
    def cv(b: float) -> float:
        gaps = np.diff(arrival_times("gamma", 100.0, 50_000, seed=1, burstiness=b))
        return float(gaps.std() / gaps.mean())

    # Gamma gaps with shape k have a coefficient of variation 1 / sqrt(k).
    assert cv(0.25) == pytest.approx(2.0, rel=0.05)
    assert cv(1.0) == pytest.approx(1.0, rel=0.05)
    assert cv(4.0) == pytest.approx(0.5, rel=0.05)


@given(st.floats(0.1, 1e5), st.integers(0, 500), st.integers(0, 2**31))
@settings(max_examples=50)
def test_poisson_times_never_go_backwards(rate: float, n: int, seed: int) -> None:
    times = arrival_times("poisson", rate, n, seed=seed)
    assert times.shape == (n,) and bool(np.all(np.diff(times) >= 0))


def test_bad_inputs_name_the_fix() -> None:
    with pytest.raises(ConfigError, match="Known: constant, poisson, gamma"):
        arrival_times("uniform", 1.0, 3)
    with pytest.raises(ConfigError, match="positive"):
        arrival_times("poisson", 0.0, 3)
    with pytest.raises(ConfigError, match="burstiness"):
        arrival_times("gamma", 1.0, 3, burstiness=0)
    assert count_for(10.0, 2.5) == 25 and count_for(1.0, 0.0, minimum=5) == 5


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_trace_rebases_times_and_shares_prefixes(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        {"timestamp": 1000, "input_length": 6, "output_length": 3, "hash_ids": [1, 2]},
        {"timestamp": 1500, "input_length": 5, "output_length": 2, "hash_ids": [1, 3]},
        {"timestamp_s": 2.0, "input_tokens": 4, "output_tokens": 1},
    ]
    trace = load_trace(_write(tmp_path / "t.jsonl", rows))
    assert trace.arrival_ns.tolist() == [0, 500_000_000, 1_000_000_000]
    assert trace.scaled(2.0).arrival_ns.tolist() == [0, 250_000_000, 500_000_000]
    prompts = TracePrompts(trace, block_size=2)
    a, b, c = (prompts.prompt(i) for i in range(3))
    assert a.text is not None and b.text is not None and c.text is not None
    assert len(a.text.split()) == 6 and len(b.text.split()) == 5
    # Equal first hash id: equal first block; different second id: different text.
    assert a.text.split()[:2] == b.text.split()[:2]
    assert a.text.split()[2:4] != b.text.split()[2:4]
    assert (a.max_tokens, b.max_tokens, c.max_tokens) == (3, 2, 1)


def test_trace_errors_name_file_and_line(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.jsonl", [{"timestamp": 0, "input_length": 1}])
    with pytest.raises(DatasetError, match=r"bad\.jsonl:1"):
        load_trace(bad)
    back = _write(
        tmp_path / "back.jsonl",
        [
            {"timestamp": 5, "input_length": 1, "output_length": 1},
            {"timestamp": 1, "input_length": 1, "output_length": 1},
        ],
    )
    with pytest.raises(DatasetError, match="backwards"):
        load_trace(back)
    with pytest.raises(DatasetError, match="Cannot read"):
        load_trace(tmp_path / "missing.jsonl")
    # A row without a timestamp was an internal KeyError; negative lengths passed.
    untimed = _write(
        tmp_path / "untimed.jsonl", [{"input_length": 1, "output_length": 1}]
    )
    with pytest.raises(
        DatasetError, match=r"untimed\.jsonl:1: bad trace row \(no timestamp\)"
    ):
        load_trace(untimed)
    negative = _write(
        tmp_path / "neg.jsonl",
        [{"timestamp": 0, "input_length": 5, "output_length": -3}],
    )
    with pytest.raises(DatasetError, match=r"neg\.jsonl:1: .*-3 out"):
        load_trace(negative)
