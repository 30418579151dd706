"""``run --mode AccuracyOnly``: stored, reported, scored, exit 3 when accuracy fails."""

from __future__ import annotations

import json
from pathlib import Path

from infermeter.results.store import Store
from tests.cli_main import run_main


def test_a_failing_accuracy_run_is_stored_reported_and_exits_3(tmp_path: Path) -> None:
    folder, store = tmp_path / "acc", tmp_path / "s.db"
    # The fake SUT answers with fixed bytes: top-1 is 0 %, far below the target.
    result = run_main(
        "run", "--sut", "fake", "--benchmark", "resnet50", "--scenario", "Offline",
        "--mode", "AccuracyOnly", "--total-sample-count", "32",
        "--output-dir", str(folder), "--store", str(store),
    )  # fmt: skip
    assert result.code == 3, result.output
    assert "Accuracy: FAIL (32 samples)" in result.stdout
    assert "warning" not in result.stderr  # nothing missing, nothing unindexed
    doc = json.loads((folder / "run.json").read_text())
    assert doc["accuracy"]["passed"] is False
    assert doc["accuracy"]["metrics"][0]["metric"] == "top1"
    assert "records.npz" not in doc["files"]
    with Store(store) as db:
        row = db.run(doc["run_id"])
    assert row["mode"] == "AccuracyOnly"
    assert row["verdict"] == "FAIL"

    html = tmp_path / "report.html"
    report = run_main("report", str(folder), "-o", str(html))
    assert report.code == 0, report.output
    text = html.read_text()
    assert "Accuracy" in text and "FAIL" in text and "top1" in text

    shown = run_main("results", "show", doc["run_id"], "--store", str(store))
    assert shown.code == 0, shown.output

    # The same verdict and exit code as scoring the folder on its own.
    scored = run_main("accuracy", str(folder))
    assert scored.code == 3


def test_an_accuracy_run_without_a_metric_is_stored_and_says_so(tmp_path: Path) -> None:
    folder, store = tmp_path / "acc", tmp_path / "s.db"
    result = run_main(
        "run", "--sut", "null", "--benchmark", "resnet50", "--scenario", "Offline",
        "--mode", "AccuracyOnly", "--total-sample-count", "16",
        "--output-dir", str(folder), "--store", str(store),
    )  # fmt: skip
    doc = json.loads((folder / "run.json").read_text())
    accuracy = doc["accuracy"]
    if accuracy.get("error"):  # not scorable: no verdict, so not a failure
        assert result.code == 0, result.output
        assert "not scored" in result.stdout
    else:
        assert result.code == (0 if accuracy["passed"] else 3)
    with Store(store) as db:
        assert db.run(doc["run_id"])["mode"] == "AccuracyOnly"
