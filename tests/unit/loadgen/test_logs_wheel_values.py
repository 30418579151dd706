"""Detail and summary values equal to the official wheel's where LoadGen is deterministic.

Each case runs the official ``mlperf_loadgen`` 6.0.17 wheel (in a subprocess,
``tests.official.probe``) and the native engine with a null SUT and the same
settings, then compares values, not only shapes: the performance sample count
as set (the submission checker compares it with the benchmark's), LoadGen's
``result_invalid_reason`` text, the TTFT early-stopping result LoadGen skips
when TPOT fails, the sample_concatenate_permutation warning and the types of
every detail key. The literal values below were read from the wheel, so the
tests without it still hold the native engine to them.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.unit.loadgen.test_logs_official import CASES as SHAPE_CASES
from tests.unit.loadgen.test_logs_official import (
    NATIVE_ONLY_ABSENT,
    write_native_logs,
)

ROOT = Path(__file__).resolve().parents[3]
HAVE_WHEEL = importlib.util.find_spec("mlperf_loadgen") is not None
needs_wheel = pytest.mark.skipif(not HAVE_WHEEL, reason="needs mlcommons-loadgen")

CASES: dict[str, dict[str, Any]] = {
    # llama2-70b: the QSL holds 1,024 samples, the benchmark asks for 24,576.
    "llama2_sample_count": {
        "scenario": "Offline",
        "offline_expected_qps": 100000.0,
        "min_duration_ms": 0,
        "min_query_count": 512,
        "use_token_latencies": True,
        "tokens": True,
        "performance_sample_count_override": 24576,
    },
    # resnet50: a 128-sample QSL, 1,024 asked for.
    "resnet50_sample_count": {
        "scenario": "SingleStream",
        "single_stream_expected_latency_ns": 100000,
        "min_duration_ms": 0,
        "min_query_count": 64,
        "total": 128,
        "perf": 128,
        "performance_sample_count_override": 1024,
    },
    "accuracy_count_above_qsl": {
        "scenario": "Offline",
        "mode": "AccuracyOnly",
        "accuracy_sample_count_override": 5000,
        "total": 300,
        "perf": 100,
    },
    # Only early stopping fails: LoadGen's reason is empty.
    "early_stopping_only": {
        "scenario": "Server",
        "server_target_qps": 2000.0,
        "min_duration_ms": 50,
        "min_query_count": 10,
        "server_target_latency_ns": 1_000_000_000,
    },
    # Latency and duration fail after a runtime error (max query count).
    "runtime_error": {
        "scenario": "Server",
        "server_target_qps": 2000.0,
        "min_duration_ms": 300,
        "min_query_count": 10,
        "max_query_count": 50,
        "server_target_latency_ns": 1,
    },
    "tpot_fails": {
        "scenario": "Server",
        "server_target_qps": 2000.0,
        "min_duration_ms": 300,
        "use_token_latencies": True,
        "ttft_latency": 2_000_000_000,
        "tpot_latency": 1,
        "tokens": True,
    },
    "concatenate_permutation": {
        "scenario": "Server",
        "server_target_qps": 2000.0,
        "min_duration_ms": 100,
        "sample_concatenate_permutation": True,
    },
    "single_stream_default_hint": {
        "scenario": "SingleStream",
        "min_duration_ms": 20,
        "min_query_count": 100,
    },
    "multi_stream_default_hint": {
        "scenario": "MultiStream",
        "min_duration_ms": 20,
        "min_query_count": 100,
    },
    "offline_issue_same": {
        "scenario": "Offline",
        "offline_expected_qps": 1000.0,
        "min_duration_ms": 0,
        "performance_issue_same": True,
        "performance_issue_same_index": 3,
        "total": 1024,
        "perf": 512,
    },
}
# Doubles LoadGen prints with 6 significant digits: a large rate prints
# without a decimal point (an int to JSON) in either engine, by value.
RATE_KEYS = (
    "per_sec",
    "per_second",
    "qps",
    "token_throughput",
)


def first_values(text: str) -> tuple[dict[str, Any], list[str]]:
    """The first value of each key (as the submission checker's parser reads it) and the errors."""
    values: dict[str, Any] = {}
    errors: list[str] = []
    for line in text.splitlines():
        if line.startswith(":::MLLOG "):
            entry = json.loads(line[len(":::MLLOG ") :])
            values.setdefault(entry["key"], entry["value"])
            if entry["metadata"]["is_error"]:
                errors.append(entry["value"])
    return values, errors


def wheel_run(case: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.official.probe",
            json.dumps(dict(case, trace=False)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    folder = Path(json.loads(out.stdout)["outdir"])
    values, errors = first_values((folder / "mlperf_log_detail.txt").read_text())
    summary = (folder / "mlperf_log_summary.txt").read_text()
    return {"values": values, "errors": errors, "summary": summary}


def native_run(case: dict[str, Any], folder: Path) -> dict[str, Any]:
    write_native_logs(case, folder)
    text = (folder / "mlperf_log_detail.txt").read_text()
    values, errors = first_values(text)
    summary = (folder / "mlperf_log_summary.txt").read_text()
    return {"values": values, "errors": errors, "summary": summary, "text": text}


@pytest.fixture(scope="module")
def wheel() -> dict[str, dict[str, Any]]:
    if not HAVE_WHEEL:
        pytest.skip("needs mlcommons-loadgen")
    every = {**CASES, **{f"shape_{k}": v for k, v in SHAPE_CASES.items()}}
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = pool.map(wheel_run, every.values())
        return dict(zip(every, runs, strict=True))


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("native")
    every = {**CASES, **{f"shape_{k}": v for k, v in SHAPE_CASES.items()}}
    return {name: native_run(case, root / name) for name, case in every.items()}


def parameters(summary: str) -> list[str]:
    return summary.split("Test Parameters Used")[1].splitlines()


def section(summary: str, start: str, end: str) -> list[str]:
    lines = summary.splitlines()
    first = lines.index(start)
    return lines[first : lines.index(end, first)]


# -- (a) the performance sample count as set ------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [("llama2_sample_count", 24576), ("resnet50_sample_count", 1024)],
)
def test_performance_sample_count_is_logged_as_set(
    native: dict[str, dict[str, Any]], name: str, expected: int
) -> None:
    got = native[name]
    assert got["values"]["effective_performance_sample_count"] == expected
    assert f"performance_sample_count : {expected}" in parameters(got["summary"])
    # The loaded set is still cut from the QSL's samples.
    qsl_size = CASES[name].get("total", 1024)
    assert len(got["values"]["loaded_qsl_set"]) == qsl_size


@needs_wheel
@pytest.mark.official
@pytest.mark.parametrize(
    "name",
    [
        "llama2_sample_count",
        "resnet50_sample_count",
        "accuracy_count_above_qsl",
        "offline_issue_same",
    ],
)
def test_sample_counts_and_schedule_equal_the_wheel(
    wheel: dict[str, dict[str, Any]], native: dict[str, dict[str, Any]], name: str
) -> None:
    ours, theirs = native[name]["values"], wheel[name]["values"]
    for key in (
        "effective_performance_sample_count",
        "effective_accuracy_sample_count",
        "effective_samples_per_query",
        "loaded_qsl_set",
        "generated_query_count",
        "generated_samples_per_query",
    ):
        assert ours.get(key) == theirs.get(key), key
    # (Counts only: the wheel's logger may add its own allocation warnings.)
    assert _count_lines(native[name]["summary"]) == _count_lines(wheel[name]["summary"])


def _count_lines(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if "_sample_count : " in line]


# -- (b) LoadGen's result_invalid_reason --------------------------------------


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("early_stopping_only", ""),
        (
            "runtime_error",
            "Reduce target QPS to improve latency. Increase the target QPS so "
            "the loadgen pre-generates more queries. ",
        ),
        (
            "tpot_fails",
            "TPOT constrain not met: Reduce target QPS to improve latency. ",
        ),
    ],
)
def test_invalid_reason_is_loadgens_text(
    native: dict[str, dict[str, Any]], name: str, reason: str
) -> None:
    values = native[name]["values"]
    assert values["result_validity"] == "INVALID"
    assert values["result_invalid_reason"] == reason


def test_a_runtime_error_is_logged_with_loadgens_text(
    native: dict[str, dict[str, Any]],
) -> None:
    assert native["runtime_error"]["errors"] == [
        "IssueQueryThread 0 Ending early: Max query count reached. query_count 50"
    ]


@needs_wheel
@pytest.mark.official
@pytest.mark.parametrize(
    "name",
    ["early_stopping_only", "runtime_error", "tpot_fails", "resnet50_sample_count"],
)
def test_validity_keys_equal_the_wheel(
    wheel: dict[str, dict[str, Any]], native: dict[str, dict[str, Any]], name: str
) -> None:
    ours, theirs = native[name]["values"], wheel[name]["values"]
    for key in (
        "result_validity",
        "result_perf_constraints_met",
        "result_min_duration_met",
        "result_min_queries_met",
        "early_stopping_met",
        "result_invalid_reason",
    ):
        assert ours.get(key, "absent") == theirs.get(key, "absent"), key
    # Every error ours logs, the wheel logs too (the wheel may add timing ones).
    assert set(native[name]["errors"]) <= set(wheel[name]["errors"])


# -- (c) TTFT early stopping is skipped when TPOT fails -------------------------


def test_ttft_early_stopping_is_empty_when_tpot_fails(
    native: dict[str, dict[str, Any]],
) -> None:
    got = native["tpot_fails"]
    assert got["values"]["early_stopping_ttft_result"] == ""
    assert got["values"]["early_stopping_tpot_result"].startswith(
        " * Run unsuccessful."
    )
    block = section(
        got["summary"], "TTFT Early Stopping Result:", "TPOT Early Stopping Result:"
    )
    assert block == ["TTFT Early Stopping Result:", ""]


@needs_wheel
@pytest.mark.official
def test_token_early_stopping_equals_the_wheel(
    wheel: dict[str, dict[str, Any]], native: dict[str, dict[str, Any]]
) -> None:
    ours, theirs = native["tpot_fails"], wheel["tpot_fails"]
    for key in ("early_stopping_ttft_result", "early_stopping_tpot_result"):
        assert ours["values"][key] == theirs["values"][key], key
    start = "TTFT Early Stopping Result:"
    assert section(ours["summary"], start, "Additional Stats") == section(
        theirs["summary"], start, "Additional Stats"
    )


# -- (d) the sample_concatenate_permutation warning -----------------------------

WARNING = [
    "WARNING: sample_concatenate_permutation was set to true. ",
    "Generated samples per query might be different as the one in the setting.",
    "Check the generated_samples_per_query line in the detailed log for the real",
    "samples_per_query value",
]


def test_concatenate_permutation_warning_is_loadgens(
    native: dict[str, dict[str, Any]],
) -> None:
    lines = parameters(native["concatenate_permutation"]["summary"])
    start = lines.index(WARNING[0])
    assert lines[start : start + 4] == WARNING


@needs_wheel
@pytest.mark.official
def test_concatenate_permutation_warning_equals_the_wheel(
    wheel: dict[str, dict[str, Any]],
) -> None:
    lines = parameters(wheel["concatenate_permutation"]["summary"])
    start = lines.index(WARNING[0])
    assert lines[start : start + 4] == WARNING


# -- expected-latency hints are doubles, and every key has the wheel's type ------


@pytest.mark.parametrize(
    ("name", "key", "text"),
    [
        (
            "single_stream_default_hint",
            "requested_single_stream_expected_latency_ns",
            "1e+06",
        ),
        (
            "multi_stream_default_hint",
            "requested_multi_stream_expected_latency_ns",
            "8e+06",
        ),
    ],
)
def test_expected_latency_hints_are_logged_as_doubles(
    tmp_path: Path, name: str, key: str, text: str
) -> None:
    native_run(CASES[name], tmp_path)
    line = next(
        line
        for line in (tmp_path / "mlperf_log_detail.txt").read_text().splitlines()
        if f'"key": "{key}"' in line
    )
    assert f'"value": {text},' in line


def _kind(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float) and any(part in key for part in RATE_KEYS):
        return "number"
    return type(value).__name__


@needs_wheel
@pytest.mark.official
@pytest.mark.parametrize("name", sorted([*CASES, *(f"shape_{k}" for k in SHAPE_CASES)]))
def test_every_detail_key_has_the_wheels_type(
    wheel: dict[str, dict[str, Any]], native: dict[str, dict[str, Any]], name: str
) -> None:
    ours, theirs = native[name]["values"], wheel[name]["values"]
    # The wheel may log a runtime error of its own on a busy machine (its two
    # clocks drifting apart, a run ending early): errors are compared where
    # the case makes them deterministic.
    missing = set(theirs) - set(ours) - NATIVE_ONLY_ABSENT - {"error_runtime"}
    assert not missing, sorted(missing)
    wrong = {
        key: (_kind(key, theirs[key]), _kind(key, ours[key]))
        for key in set(theirs) & set(ours)
        if _kind(key, theirs[key]) != _kind(key, ours[key])
    }
    assert not wrong, wrong
    settings = {
        k: v
        for k, v in theirs.items()
        if k.startswith(("requested_", "effective_", "qsl_reported_"))
    }
    assert {k: ours.get(k) for k in settings} == settings


# -- the official log parser's rules ---------------------------------------------


@pytest.mark.parametrize("name", sorted([*CASES, *(f"shape_{k}" for k in SHAPE_CASES)]))
def test_detail_logs_read_as_the_official_parser_reads_them(
    native: dict[str, dict[str, Any]], name: str
) -> None:
    """tools/submission/log_parser.py: the first line starts with ``:::MLLOG``,
    every marked line is JSON with key, value and metadata.is_error/is_warning."""
    text = native[name]["text"]
    lines = text.splitlines()
    assert lines[0].startswith(":::MLLOG")
    for line in lines:
        if line.startswith(":::MLLOG"):
            message = json.loads(line[len(":::MLLOG") :])
            assert {"key", "value", "metadata"} <= set(message)
            assert isinstance(message["metadata"]["is_error"], bool)
            assert isinstance(message["metadata"]["is_warning"], bool)
