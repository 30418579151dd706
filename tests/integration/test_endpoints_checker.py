"""A 7-point curve against the timed mock, run by the rules with its accuracy passes,
packaged, and passed through the official MLPerf Endpoints checker (PyPI
endpoints-submission-cli).

Windows are shortened to fractions of a second (the rules ask 600 s and 1,200 s): the
checker reports those as warnings. The accuracy passes run at §5.3's N points (r1,
r2, r8 and r40, the elected Offline point) on an 8-row set; the checker must find
them where it looks and report no accuracy error. Packaged as ``llama3_1-8b``, the
checker also gates the scores against that model's targets (ROUGE >= 38.4 on >= 13,368
samples), which the mock's placeholder answers on 8 rows cannot meet: the test
asserts that the checker read our scores and counts there, and nothing else failed.
Skipped where the checker is not installed (pip install 'infermeter[endpoints]', or
INFERMETER_ENDPOINTS_CHECKER=PATH of its command).
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
ACCURACY_AT = [1, 2, 8, 40]  # one per mandatory band; r40 is also the Offline point
DATASET = 8
# A model the checker has no accuracy targets for: the tree must pass with no error.
UNGATED_MODEL = "qwen3_6-35b-a3b"
# llama3_1-8b's gate: the errors of the mock's answers on a test-sized set, and why.
GATED_ERRORS = {
    "accuracy-sample-count",  # 8 rows, not the 13,368 of the model's accuracy set
    "accuracy-gate",  # the timed mock answers "tok tok ...": ROUGE 0, gen_len short
}
GEN_LEN_MIN = 8167644 * 0.9  # llama3_1-8b's gen_len gate: 13,368 answers' characters
# Shortened windows are warnings, not errors, in the checker (§6.2 point-duration).
EXPECTED_WARNINGS = {"point-duration"}


@pytest.fixture(scope="module")
def checker() -> str:
    found = find_checker()
    if found is None:
        pytest.skip("endpoints-submission-cli is not installed")
    return found


def _accuracy_set(path: Path) -> Path:
    rows = [
        {"prompt": f"article {i}: the quick brown fox", "reference": f"fox {i} jumps"}
        for i in range(DATASET)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_shortened_curve_with_its_accuracy_passes_the_official_checker(
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
                accuracy_file=_accuracy_set(tmp_path / "cnn_eval.jsonl"),
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
    assert [o.concurrency for o in outcomes if o.accuracy] == ACCURACY_AT
    for o in outcomes:
        if o.accuracy is not None:  # every row answered once
            assert sorted(o.accuracy.order) == list(range(DATASET))
            assert o.accuracy.answered == DATASET

    root = package(
        PackageRequest(
            sources=[tmp_path / "curve"],
            out=tmp_path / "tree",
            model_name=UNGATED_MODEL,
            seed_set="A",
        )
    )
    curve = root / "results" / "my_system" / UNGATED_MODEL
    assert sorted(p.name for p in (curve / "r40").iterdir()) == [
        "accuracy_results.json",
        "config.yaml",
        "point.yaml",
        "result_summary.json",
        "system_desc.json",
    ]
    assert not (curve / "r4" / "accuracy_results.json").exists()
    summary = json.loads((curve / "r40" / "result_summary.json").read_text())
    assert summary["n_samples_issued"] == outcomes[-1].result.metrics.issued

    report = run_checker(root.parent, checker)
    assert not report.errors, [str(f) for f in report.errors]
    assert {f.rule for f in report.warnings} >= EXPECTED_WARNINGS
    passed = {f.rule for f in report.findings if f.severity == "info"}
    assert {
        "point-count",
        "high-concurrency-coverage",
        "seed-runtime-match",
        "accuracy-coverage",
        "accuracy-present",
    } <= passed

    gated = package(
        PackageRequest(
            sources=[tmp_path / "curve"],
            out=tmp_path / "gated",
            model_name="llama3_1-8b",
            seed_set="A",
        )
    )
    report = run_checker(gated.parent, checker)
    assert {f.rule for f in report.errors} == GATED_ERRORS
    messages = " / ".join(f.message for f in report.errors)
    assert f"{DATASET} samples (issued) < required 13368" in messages
    assert "rouge1 = 0.0000 < min" in messages  # our score, as the checker read it
    # gen_len: characters of the 8 answers, each "tok" x 8 joined by spaces
    acc = outcomes[-1].accuracy
    assert acc is not None and acc.scores["gen_len"] == DATASET * (8 * 4 - 1)
    assert f"gen_len = {acc.scores['gen_len']:.4f} < min {GEN_LEN_MIN:.4f}" in messages


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
