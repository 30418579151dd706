"""A 7-point curve against the timed mock, run by the rules, packaged, and passed
through the official MLPerf Endpoints checker (PyPI endpoints-submission-cli).

Windows are shortened to fractions of a second (the rules ask 600 s and 1,200 s) and
no accuracy run is made, so the checker must report those, and nothing else, as
errors. Skipped where the checker is not installed (pip install
'infermeter[endpoints]', or INFERMETER_ENDPOINTS_CHECKER=PATH of its command).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli_main import run_main

from infermeter.runs.endpoints_check import find_checker, run_checker
from infermeter.runs.endpoints_package import PackageRequest, package
from infermeter.runs.endpoints_run import EndpointsRunRequest, run_points
from infermeter.servers.mock import MockConfig, MockServer

pytestmark = pytest.mark.integration

LEVELS = [1, 2, 4, 8, 16, 32, 40]
DATASET = 8
# The checker's errors a shortened, accuracy-less curve may have (rule ids), and why:
ALLOWED_ERRORS = {
    "accuracy-coverage",  # no accuracy run in the four mandatory regions (§4.3, §5.3)
    "accuracy-present",  # no accuracy_results.json anywhere
}
# Shortened windows are warnings, not errors, in the checker (§6.2 point-duration).
EXPECTED_WARNINGS = {"point-duration"}


@pytest.fixture(scope="module")
def checker() -> str:
    found = find_checker()
    if found is None:
        pytest.skip("endpoints-submission-cli is not installed")
    return found


def test_a_shortened_curve_passes_the_official_checker_but_for_accuracy(
    tmp_path: Path, checker: str
) -> None:
    timed = MockConfig(
        mode="timed", ttft="const:0.004", itl="const:0.001", output_tokens="const:8"
    )
    with MockServer(timed) as url:
        outcomes = run_points(
            EndpointsRunRequest(
                sut_options={"url": url, "model": "m"},
                concurrency=LEVELS,
                out_dir=tmp_path / "curve",
                dataset_size=DATASET,
                input_tokens=8,
                output_tokens=8,
                seed_set="A",
                duration_s=0.2,
            )
        )
    assert [o.concurrency for o in outcomes] == LEVELS
    for o in outcomes:
        m = o.result.metrics
        # whole passes; every query answered; the warmup declared apart
        assert m.issued == o.passes * DATASET and o.passes >= 1
        assert (m.completed, m.failed) == (m.issued, 0)
        assert o.warmup["requests_issued"] == max(8, 2 * o.concurrency)
        assert any("shortens" in p for p in o.problems)  # labelled not submittable
        assert o.steady["status"] != "windowable"  # judged on the rules' 600 / 1,200 s
    root = package(
        PackageRequest(
            sources=[tmp_path / "curve"],
            out=tmp_path / "tree",
            model_name="llama3_1-8b",
            seed_set="A",
        )
    )
    point = root / "results" / "my_system" / "llama3_1-8b" / "r40"
    assert sorted(p.name for p in point.iterdir()) == [
        "config.yaml",
        "point.yaml",
        "result_summary.json",
        "system_desc.json",
    ]
    summary = json.loads((point / "result_summary.json").read_text())
    assert summary["n_samples_issued"] == outcomes[-1].result.metrics.issued

    report = run_checker(root.parent, checker)
    errors = {f.rule for f in report.errors}
    assert errors <= ALLOWED_ERRORS, [
        str(f) for f in report.errors if f.rule not in ALLOWED_ERRORS
    ]
    assert errors, "the checker should miss the accuracy runs"  # it did read the tree
    assert {f.rule for f in report.warnings} >= EXPECTED_WARNINGS
    passed = {f.rule for f in report.findings if f.severity == "info"}
    assert {"point-count", "high-concurrency-coverage", "seed-runtime-match"} <= passed


def test_check_command_prints_the_checkers_findings(
    tmp_path: Path, checker: str
) -> None:
    (tmp_path / "org" / "sub" / "results").mkdir(parents=True)
    done = run_main("endpoints", "check", str(tmp_path / "org"), "--checker", checker)
    assert done.code == 3, done.output  # the checker's errors: infermeter's exit 3
    assert "submission-checker FAILED" in done.stdout and "required-dir" in done.stdout
    missing = run_main(
        "endpoints", "check", str(tmp_path), "--checker", "/no/such/checker"
    )
    assert missing.code == 2 and "not an executable" in missing.stderr
