"""Every scenario of every registered benchmark runs to a verdict with ``--sut fake``.

Short real-time runs (the fake SUT answers in a fraction of a millisecond; query
counts are the smallest that let early stopping decide). The verdict itself may
be VALID or INVALID on a busy machine: what is checked is that the run ends with
one, and that the settings it ran under are the benchmark's (the conf's) rules.
"""

from __future__ import annotations

import json

import pytest

from infermeter.workloads import Benchmark, get_benchmark, list_benchmarks
from tests.cli_main import run_main

NS_PER_MS = 1_000_000

# Per scenario: the smallest load that still gives early stopping its minimum.
LOAD = {
    "SingleStream": ["--min-duration", "1ms", "--min-query-count", "64"],
    "MultiStream": ["--min-duration", "1ms", "--min-query-count", "662"],
    "Server": [
        "--min-duration",
        "1ms",
        "--min-query-count",
        "700",
        "--target-qps",
        "5000",
    ],
    "Offline": [
        "--min-duration",
        "10ms",
        "--min-query-count",
        "8",
        "--target-qps",
        "1000",
    ],
}


def _cases() -> list[tuple[str, str]]:
    cases = []
    for bench in list_benchmarks():
        for scenario in bench.scenarios:
            if scenario == "Interactive":
                cases.append((f"{bench.name}-interactive", "Server"))
            else:
                cases.append((bench.name, scenario))
    return cases


def _sut_options(bench: Benchmark, scenario: str) -> list[str]:
    # Offline must outlast --min-duration; the other scenarios answer at once.
    slow = scenario == "Offline"
    if bench.is_llm:
        first = "15" if slow else "0.1"
        return ["--sut-opt", f"ttft_ms={first}", "--sut-opt", "tpot_ms=0.01"]
    return ["--sut-opt", f"latency_ms={'15' if slow else '0.1'}"]


@pytest.mark.parametrize(("name", "scenario"), _cases())
def test_run_reaches_a_verdict(tmp_path, name: str, scenario: str) -> None:
    bench = get_benchmark(name)
    folder = tmp_path / "run"
    args = [
        "run",
        "--benchmark",
        name,
        "--scenario",
        scenario,
        "--sut",
        "fake",
        "--total-sample-count",
        "8",  # a MultiStream query's eight; each sample loaded is made anew
        "--output-dir",
        str(folder),
        "--store",
        str(tmp_path / "store.db"),
        *LOAD[scenario],
        *_sut_options(bench, scenario),
    ]
    result = run_main(*args)
    assert result.code in (0, 3), result.output
    doc = json.loads((folder / "run.json").read_text())
    assert doc["benchmark"] == bench.name
    assert doc["scenario"] == scenario
    assert doc["verdict"]["result"] in ("VALID", "INVALID")
    assert result.code == (0 if doc["verdict"]["valid"] else 3)
    requested = doc["settings"]["requested"]
    assert requested["use_token_latencies"] is bench.use_token_latencies
    assert requested["sample_concatenate_permutation"] is bench.equal_issue
    if scenario == "Server" and bench.ttft_ms is not None:
        assert requested["ttft_latency"] == bench.ttft_ms * NS_PER_MS
        assert requested["tpot_latency"] == bench.tpot_ms * NS_PER_MS
    elif scenario == "Server":
        assert requested["server_target_latency_ns"] == (
            bench.server_target_latency_ms * NS_PER_MS
        )


def test_every_benchmark_has_a_case() -> None:
    names = {get_benchmark(n).name.removesuffix("-interactive") for n, _ in _cases()}
    assert names == {b.name for b in list_benchmarks()}


def test_a_scenario_outside_the_rules_runs_with_a_warning(tmp_path) -> None:
    folder = tmp_path / "run"
    args = ["run", "--benchmark", "3d-unet", "--scenario", "Server", "--sut", "fake"]
    args += ["--total-sample-count", "16", "--output-dir", str(folder)]
    args += ["--store", str(tmp_path / "s.db"), *LOAD["Server"]]
    result = run_main(*args)
    assert result.code in (0, 3), result.output
    warnings = json.loads((folder / "run.json").read_text())["warnings"]
    assert any(
        "3d-unet has no Server scenario in the MLPerf rules" in w for w in warnings
    )
