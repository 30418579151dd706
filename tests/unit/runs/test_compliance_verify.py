"""The compliance checks on hand-written logs: each rule of the official scripts, both ways."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.loadgen.conf import settings_from_confs
from infermeter.loadgen.settings import Mode, Scenario
from infermeter.runs.compliance import audit_config_text, parse_test, verify
from infermeter.runs.compliance.verify import (
    check_test01_accuracy,
    check_test01_performance,
    check_test04_performance,
    check_test06_accuracy,
)


def write_accuracy(path: Path, entries: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = ",\n".join(json.dumps(e) for e in entries)
    path.write_text(f"[\n{body}\n]\n")
    return path


def entry(
    qsl_idx: int, values: list[int], dtype: str = "int32", **extra: object
) -> dict:
    data = np.asarray(values, dtype=dtype).tobytes().hex().upper()
    return {"seq_id": qsl_idx, "qsl_idx": qsl_idx, "data": data, **extra}


def write_detail(path: Path, values: dict[str, object], errors: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for key, value in values.items():
        meta = {"is_error": False, "is_warning": False}
        lines.append(
            ":::MLLOG " + json.dumps({"key": key, "value": value, "metadata": meta})
        )
    for k in range(errors):
        meta = {"is_error": True, "is_warning": False}
        lines.append(
            ":::MLLOG "
            + json.dumps({"key": "error_runtime", "value": f"e{k}", "metadata": meta})
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def detail(
    scenario: str, score: float, validity: str = "VALID", **more: object
) -> dict:
    field = {
        "Offline": "result_samples_per_second",
        "Server": "result_completed_samples_per_sec",
        "SingleStream": "early_stopping_latency_ss",
        "MultiStream": "early_stopping_latency_ms",
    }[scenario]
    return {
        "effective_scenario": scenario,
        "effective_target_latency_ns": 15_000_000,
        "result_validity": validity,
        field: score,
        **more,
    }


# -- TEST01 accuracy -----------------------------------------------------------------


def test_test01_accuracy_passes_when_sampled_responses_match(tmp_path: Path) -> None:
    ref = write_accuracy(tmp_path / "acc.json", [entry(i, [i, 7, 9]) for i in range(8)])
    test = write_accuracy(
        tmp_path / "perf.json", [entry(3, [3, 7, 9]), entry(5, [5, 7, 9])]
    )
    result = check_test01_accuracy(ref, test, dtype="int32")
    assert result.passed
    assert "num_perf_log_qsl_idx_match = 2" in result.lines
    assert result.lines[-2:] == ("TEST PASS", "")


def test_test01_accuracy_fails_on_a_different_answer(tmp_path: Path) -> None:
    ref = write_accuracy(tmp_path / "acc.json", [entry(i, [i, 7]) for i in range(8)])
    test = write_accuracy(tmp_path / "perf.json", [entry(3, [4, 7]), entry(5, [5, 7])])
    result = check_test01_accuracy(ref, test, dtype="int32")
    assert not result.passed
    assert "num_perf_log_data_mismatch = 1" in result.lines
    assert "TEST FAIL" in result.lines


def test_test01_accuracy_fails_when_nothing_was_compared(tmp_path: Path) -> None:
    ref = write_accuracy(tmp_path / "acc.json", [entry(1, [1])])
    test = write_accuracy(tmp_path / "perf.json", [entry(2, [2])])
    result = check_test01_accuracy(ref, test, dtype="int32")
    assert not result.passed
    assert "num_missing_qsl_idxs = 1" in result.lines


def test_test01_accuracy_compares_the_first_element_and_says_so(tmp_path: Path) -> None:
    # The official script compares only the first dtype element (a byte by
    # default): the verdict follows it, a note tells the rest.
    ref = write_accuracy(tmp_path / "acc.json", [entry(1, [1, 2, 3])])
    test = write_accuracy(tmp_path / "perf.json", [entry(1, [1, 9, 9])])
    result = check_test01_accuracy(ref, test)
    assert result.passed
    assert result.notes and "after their first element" in result.notes[0]


# -- TEST01 performance and TEST04 ------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "ref", "got", "passed"),
    [
        ("Offline", 1000.0, 1090.0, True),
        ("Offline", 1000.0, 1110.0, False),
        ("Offline", 1000.0, 890.0, False),
        ("Server", 500.0, 460.0, True),
        # Short single-stream latencies get 20 %.
        ("SingleStream", 100_000.0, 118_000.0, True),
        ("SingleStream", 1_000_000.0, 1_180_000.0, False),
    ],
)
def test_test01_performance_tolerance(
    tmp_path: Path, scenario: str, ref: float, got: float, passed: bool
) -> None:
    a = write_detail(tmp_path / "ref.txt", detail(scenario, ref))
    b = write_detail(tmp_path / "test.txt", detail(scenario, got))
    result = check_test01_performance(a, b)
    assert result.passed is passed
    assert result.lines[-1] == (
        "TEST PASS" if passed else "TEST FAIL: Test score invalid"
    )


def test_test01_performance_needs_valid_runs_of_one_scenario(tmp_path: Path) -> None:
    good = write_detail(tmp_path / "good.txt", detail("Offline", 1000.0))
    bad = write_detail(tmp_path / "bad.txt", detail("Offline", 1000.0, "INVALID"))
    assert "Invalid results" in check_test01_performance(good, bad).lines[-1]
    other = write_detail(tmp_path / "other.txt", detail("Server", 1000.0))
    assert "do not match" in check_test01_performance(good, other).lines[-1]
    errors = write_detail(tmp_path / "errors.txt", detail("Offline", 1000.0), errors=2)
    assert "2 ERROR" in check_test01_performance(good, errors).lines[-1]


SUMMARY = """\
================================================
MLPerf Results Summary
================================================
SUT name : S
Scenario : {scenario}
Mode     : PerformanceOnly
{headline}
Result is : {validity}
Early Stopping Result:
{es}
"""


def write_summary(
    path: Path, scenario: str, value: float, validity: str = "VALID"
) -> Path:
    headline, es = "", ""
    if scenario == "Offline":
        headline = f"Samples per second: {value:g}"
    elif scenario == "Server":
        headline = f"Completed samples per second    : {value:.2f}"
    elif scenario == "SingleStream":
        es = (
            f" * Early stopping 90.0th percentile estimate: {int(value)}\n"
            " * Early stopping 99.0th percentile estimate: 1"
        )
    path.write_text(
        SUMMARY.format(scenario=scenario, headline=headline, validity=validity, es=es)
    )
    return path


@pytest.mark.parametrize(
    ("scenario", "ref", "got", "passed"),
    [
        ("Offline", 1000.0, 1050.0, True),
        ("Offline", 1000.0, 500.0, True),  # slower is fine: only caching is looked for
        ("Offline", 1000.0, 1200.0, False),
        ("Server", 1000.0, 1200.0, False),
        # SingleStream scores are 1e9 / latency: a 2x lower latency is 2x better.
        ("SingleStream", 1_000_000.0, 1_000_000.0, True),
        ("SingleStream", 1_000_000.0, 500_000.0, False),
    ],
)
def test_test04_flags_a_much_faster_same_sample_run(
    tmp_path: Path, scenario: str, ref: float, got: float, passed: bool
) -> None:
    a = write_summary(tmp_path / "ref.txt", scenario, ref)
    b = write_summary(tmp_path / "test.txt", scenario, got)
    result = check_test04_performance(a, b)
    assert result.passed is passed
    assert result.lines[-1] == (
        "TEST PASS" if passed else "TEST FAIL: Test score invalid"
    )


def test_test04_fails_on_an_invalid_run(tmp_path: Path) -> None:
    a = write_summary(tmp_path / "ref.txt", "Offline", 1000.0)
    b = write_summary(tmp_path / "test.txt", "Offline", 1000.0, "INVALID")
    assert (
        check_test04_performance(a, b).lines[-1]
        == "TEST FAIL: Test results are invalid"
    )


# -- TEST06 ----------------------------------------------------------------------


def tokens(
    qsl_idx: int, values: list[int], first: list[int] | None, count: int
) -> dict:
    extra: dict[str, object] = {"token_count": count}
    if first is not None:
        extra["token_data"] = np.asarray(first, np.int64).tobytes().hex().upper()
    return entry(qsl_idx, values, "int64", **extra)


@pytest.mark.parametrize(
    ("sample", "scenario", "expected"),
    [
        (tokens(0, [5, 6, 2], [5], 3), "Server", ("True", "True", "True", "complete")),
        (
            tokens(0, [5, 6, 2], None, 3),
            "Offline",
            ("Skipped", "True", "True", "complete"),
        ),
        (tokens(0, [5, 6, 2], [7], 3), "Server", ("False", "True", "True", "failed")),
        (tokens(0, [5, 2, 2], [5], 3), "Server", ("True", "False", "True", "failed")),
        (tokens(0, [5, 6, 2], [5], 4), "Server", ("True", "True", "False", "failed")),
        (tokens(0, [5, 6, 2], None, 3), "Server", ("False", "True", "True", "failed")),
    ],
)
def test_test06_lines(
    tmp_path: Path, sample: dict, scenario: str, expected: tuple[str, ...]
) -> None:
    log = write_accuracy(tmp_path / "acc.json", [sample])
    result = check_test06_accuracy(log, scenario=scenario, dtype="int64")
    assert result.lines == (
        f"First token check pass: {expected[0]}",
        f"EOS check pass: {expected[1]}",
        f"Sample length check pass: {expected[2]}",
        f"TEST06 verification {expected[3]}",
    )
    assert result.passed is (expected[3] == "complete")


# -- layout and configs ------------------------------------------------------------


def test_verify_writes_the_submission_layout(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_accuracy(results / "accuracy" / "mlperf_log_accuracy.json", [entry(1, [1])])
    write_detail(
        results / "performance" / "run_1" / "mlperf_log_detail.txt",
        detail("Offline", 10.0),
    )
    audit = tmp_path / "audit"
    write_accuracy(audit / "mlperf_log_accuracy.json", [entry(1, [1])])
    write_detail(audit / "mlperf_log_detail.txt", detail("Offline", 10.5))
    (audit / "mlperf_log_summary.txt").write_text("summary\n")
    result = verify(
        "test01", compliance_dir=audit, output_dir=results, results_dir=results
    )
    assert result.passed
    out = results / "TEST01"
    assert (out / "verify_accuracy.txt").read_text().endswith("TEST PASS\n\n")
    assert "TEST PASS" in (out / "verify_performance.txt").read_text()
    assert (out / "accuracy" / "mlperf_log_accuracy.json").is_file()
    run_1 = sorted(p.name for p in (out / "performance" / "run_1").iterdir())
    assert run_1 == ["mlperf_log_detail.txt", "mlperf_log_summary.txt"]


def test_verify_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--results-dir"):
        verify("TEST04", compliance_dir=tmp_path, output_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"mlperf_log_summary\.txt not found"):
        verify(
            "TEST04", compliance_dir=tmp_path, output_dir=tmp_path, results_dir=tmp_path
        )
    with pytest.raises(ConfigError, match="Known: TEST01, TEST04, TEST06"):
        parse_test("TEST05")


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("TEST01", {"accuracy_log_sampling_target": 1024, "min_query_count": 100}),
        ("TEST04", {"performance_issue_same": True, "performance_issue_same_index": 3}),
        ("TEST06", {"accuracy_log_sampling_target": 100, "min_duration_ms": 0}),
    ],
)
def test_audit_configs_read_as_loadgen_reads_them(
    tmp_path: Path, test: str, expected: dict[str, object]
) -> None:
    path = tmp_path / "audit.config"
    path.write_text(audit_config_text(test, "resnet50"))
    settings, warnings = settings_from_confs(
        "resnet50", Scenario.SERVER, audit_conf_path=path
    )
    assert not warnings
    assert settings.mode is Mode.PERFORMANCE_ONLY
    assert {k: getattr(settings, k) for k in expected} == expected
    if test != "TEST04":
        assert settings.accuracy_log_rng_seed == 720381539243781796
