"""TEST01, TEST04 and TEST06 end to end: PASS on an honest SUT, FAIL on one built to cheat each.

Native-engine runs are in virtual time (``ManualClock``): the audit fake SUT
serves samples one after another, so scores are exact and no scheduler delay
moves them. The official engine keeps its own clock, so its runs check what
does not depend on timing noise (responses, tokens, a blatant cache).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infermeter.loadgen.settings import Scenario
from infermeter.runs.compliance import AuditReport, run_audit
from infermeter.runs.compliance.verify import first_values
from infermeter.runs.request import RunRequest
from infermeter.runs.run import execute
from infermeter.testing import ManualClock

pytestmark = pytest.mark.integration

SINGLE_STREAM = {
    "scenario": Scenario.SINGLE_STREAM,
    "overrides": {
        "min_duration_ms": 500,
        "min_query_count": 100,
        "single_stream_expected_latency_ns": 1_000_000,
    },
}
# 1.1 x 1 s x 1500 = 1,650 samples of 1 ms: 1.65 s, or 1.1 s with a 1.5x cache.
OFFLINE = {
    "scenario": Scenario.OFFLINE,
    "target_qps": 1500.0,
    "overrides": {"min_duration_ms": 1000, "min_query_count": 100},
}
SERVER_LLM = {
    "benchmark": "llama2-70b",
    "scenario": Scenario.SERVER,
    "target_qps": 100.0,
}
OFFLINE_LLM = {
    "benchmark": "llama2-70b",
    "scenario": Scenario.OFFLINE,
    "target_qps": 100.0,
}


# Each run loads its samples first (a 224 x 224 image takes milliseconds to make):
# 16 are as many as the audits need (TEST04 repeats one; TEST01 compares the
# responses it samples by sample index, however few the samples).
SAMPLES = 16


def audit(
    tmp_path: Path, test: str, engine: str = "native", **fields: Any
) -> AuditReport:
    options = {"latency_ms": "1", **fields.pop("sut_options", {})}
    request = RunRequest(
        benchmark=fields.pop("benchmark", "resnet50"),
        sut="audit-fake",
        sut_options=options,
        total_sample_count=SAMPLES,
        output_dir=tmp_path / "results",
        store=tmp_path / "store.db",
        engine=engine,
        **fields,
    )

    def run_one(one: RunRequest) -> Any:
        return execute(one, clock=ManualClock()) if engine == "native" else execute(one)

    return run_audit(test, request, run_one=run_one)


def verdicts(report: AuditReport) -> dict[str, bool]:
    return {name: check.passed for name, check in report.result.checks.items()}


# -- TEST01: accuracy in performance mode ----------------------------------------


@pytest.mark.parametrize(
    "setup", [SINGLE_STREAM, OFFLINE], ids=["SingleStream", "Offline"]
)
def test_test01_passes_on_an_honest_sut(tmp_path: Path, setup: dict[str, Any]) -> None:
    report = audit(tmp_path, "TEST01", **setup)
    assert verdicts(report) == {"accuracy": True, "performance": True}
    lines = report.result.checks["accuracy"].lines
    matched = next(
        line for line in lines if line.startswith("num_perf_log_qsl_idx_match")
    )
    assert int(matched.split(" = ")[1]) > 10  # sampled responses were compared
    # The audit run applied the audit.config: sampled logging, LoadGen's notice.
    values, _ = first_values(
        report.folder / "runs" / "TEST01" / "mlperf_log_detail.txt"
    )
    assert values["effective_accuracy_log_sampling_target"] == 1024
    assert values["effective_accuracy_log_rng_seed"] == 720381539243781796
    assert values["warning_generic_message"].startswith("Found Audit Config file")
    layout = {
        str(p.relative_to(report.folder))
        for p in report.folder.rglob("*")
        if p.is_file() and "runs" not in p.parts
    }
    assert layout == {
        "accuracy/mlperf_log_accuracy.json",
        "accuracy/mlperf_log_detail.txt",
        "accuracy/mlperf_log_summary.txt",
        "performance/run_1/mlperf_log_detail.txt",
        "performance/run_1/mlperf_log_summary.txt",
        "TEST01/verify_accuracy.txt",
        "TEST01/verify_performance.txt",
        "TEST01/accuracy/mlperf_log_accuracy.json",
        "TEST01/performance/run_1/mlperf_log_detail.txt",
        "TEST01/performance/run_1/mlperf_log_summary.txt",
    }


def test_test01_fails_on_a_sut_that_answers_differently_in_performance_mode(
    tmp_path: Path,
) -> None:
    report = audit(
        tmp_path, "TEST01", sut_options={"cheat": "perf-mode"}, **SINGLE_STREAM
    )
    assert verdicts(report) == {"accuracy": False, "performance": True}
    text = (report.folder / "TEST01" / "verify_accuracy.txt").read_text()
    assert "TEST FAIL" in text and "TEST PASS" not in text
    assert not report.passed


# -- TEST04: caching ----------------------------------------------------------------


@pytest.mark.parametrize(
    "setup", [SINGLE_STREAM, OFFLINE], ids=["SingleStream", "Offline"]
)
def test_test04_passes_on_an_honest_sut(tmp_path: Path, setup: dict[str, Any]) -> None:
    report = audit(tmp_path, "TEST04", **setup)
    assert verdicts(report) == {"performance": True}
    values, _ = first_values(
        report.folder / "runs" / "TEST04" / "mlperf_log_detail.txt"
    )
    assert values["effective_performance_issue_same"] is True
    assert values["effective_performance_issue_same_index"] == 3


@pytest.mark.parametrize(
    "setup", [SINGLE_STREAM, OFFLINE], ids=["SingleStream", "Offline"]
)
def test_test04_fails_on_a_sut_that_caches_answers(
    tmp_path: Path, setup: dict[str, Any]
) -> None:
    # A mild cache: both runs stay VALID and the score gives it away.
    report = audit(
        tmp_path,
        "TEST04",
        sut_options={"cheat": "cache", "cache_speedup": "1.5"},
        **setup,
    )
    check = report.result.checks["performance"]
    assert not check.passed
    assert check.lines[-1] == "TEST FAIL: Test score invalid"
    assert (
        "TEST FAIL" in (report.folder / "TEST04" / "verify_performance.txt").read_text()
    )


# -- TEST06: LLM output consistency ----------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "first_token"),
    [(SERVER_LLM, "True"), (OFFLINE_LLM, "Skipped")],
    ids=["Server", "Offline"],
)
def test_test06_passes_on_an_honest_sut(
    tmp_path: Path, setup: dict[str, Any], first_token: str
) -> None:
    report = audit(tmp_path, "TEST06", **setup)
    assert report.passed
    text = (report.folder / "TEST06" / "verify_accuracy.txt").read_text()
    assert text == (
        f"First token check pass: {first_token}\nEOS check pass: True\n"
        "Sample length check pass: True\nTEST06 verification complete\n"
    )
    logged = json.loads(
        (report.folder / "TEST06" / "accuracy" / "mlperf_log_accuracy.json").read_text()
    )
    assert len(logged) >= 50  # the audit.config samples about 100 responses


@pytest.mark.parametrize(
    ("cheat", "failing"),
    [
        ("first-token", "First token check pass: False"),
        ("eos", "EOS check pass: False"),
        ("token-count", "Sample length check pass: False"),
    ],
)
def test_test06_fails_on_a_sut_that_breaks_a_rule(
    tmp_path: Path, cheat: str, failing: str
) -> None:
    report = audit(tmp_path, "TEST06", sut_options={"cheat": cheat}, **SERVER_LLM)
    assert not report.passed
    text = (report.folder / "TEST06" / "verify_accuracy.txt").read_text().splitlines()
    assert failing in text
    assert text[-1] == "TEST06 verification failed"


# -- the official engine ---------------------------------------------------------------

OFFICIAL_OFFLINE = {
    "scenario": Scenario.OFFLINE,
    # 1.1 x 0.5 s x 4000 = 2,200 samples of 0.5 ms: 1.1 s, so that a stall of
    # the machine (which only ever delays completions) stays far below 10 %.
    "target_qps": 4000.0,
    "overrides": {"min_duration_ms": 500, "min_query_count": 100},
}


@pytest.mark.official
@pytest.mark.parametrize(
    ("test", "cheat", "expected"),
    [
        ("TEST01", "none", {"accuracy": True}),
        ("TEST01", "perf-mode", {"accuracy": False}),
        # An honest TEST04 in real time passes unless the machine stalls near
        # the end of the reference run (a stall only ever slows a run): its
        # verdict is checked in virtual time above, here only that it ran.
        ("TEST04", "none", {}),
        ("TEST04", "cache", {"performance": False}),
    ],
)
def test_official_engine_runs_the_audit(
    tmp_path: Path, test: str, cheat: str, expected: dict[str, bool]
) -> None:
    pytest.importorskip("mlperf_loadgen")
    report = audit(
        tmp_path,
        test,
        engine="mlcommons",
        sut_options={"cheat": cheat, "latency_ms": "0.5"},
        **OFFICIAL_OFFLINE,
    )
    assert report.runs[test].document["engine"]["name"] == "mlcommons-loadgen"
    got = verdicts(report)
    assert {k: got[k] for k in expected} == expected
    if test == "TEST04" and cheat == "none":
        assert all(r.document["verdict"]["valid"] for r in report.runs.values())
        lines = report.result.checks["performance"].lines
        assert any(line.startswith("test score = ") for line in lines)
    values, _ = first_values(report.folder / "runs" / test / "mlperf_log_detail.txt")
    assert values["warning_generic_message"].startswith("Found Audit Config file")


@pytest.mark.official
@pytest.mark.parametrize(("cheat", "passed"), [("none", True), ("first-token", False)])
def test_official_engine_runs_test06(tmp_path: Path, cheat: str, passed: bool) -> None:
    pytest.importorskip("mlperf_loadgen")
    report = audit(
        tmp_path,
        "TEST06",
        engine="mlcommons",
        sut_options={"cheat": cheat, "latency_ms": "0.2"},
        **SERVER_LLM,
    )
    assert report.passed is passed
