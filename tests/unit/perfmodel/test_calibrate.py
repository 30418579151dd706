"""Calibration on published rows: reader gotchas, leave-one-out error, fallbacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infermeter.errors import DatasetError
from infermeter.perfmodel.calibrate import calibrate, default_report, efficiency_for
from infermeter.perfmodel.published import (
    builtin_rows,
    default_summary_path,
    load_rows,
    read_summary_json,
)

V41 = (
    Path(__file__).resolve().parents[3]
    / ".."
    / "shared"
    / "data"
    / "mlperf"
    / ("summary_results_v4.1.json")
)


def _raw(**over: object) -> dict[str, object]:
    row: dict[str, object] = {
        "ID": "v4.1-9999",
        "Submitter": "X",
        "Category": "closed",
        "Suite": "datacenter",
        "Model": "llama2-70b-99",
        "Scenario": "Offline",
        "Nodes": 2,
        "Accelerator": "NVIDIA H100-SXM-80GB",
        "a#": 8.0,
        "Software": "TensorRT 10.2.0, CUDA 12.4",
        "weight_data_types": "fp16",
        "Performance_Result": 40000.0,
        "Performance_Units": "Tokens/s",
    }
    row.update(over)
    return row


def test_reader_merges_duplicates_multiplies_nodes_and_skips_non_llm(
    tmp_path: Path,
) -> None:
    rows = [
        _raw(),
        _raw(Model="llama2-70b-99.9"),  # same run reported for the 99.9 target
        _raw(Scenario="Server", Performance_Result="35000.5", Nodes=2),  # string drift
        _raw(Model="resnet", Performance_Units="Samples/s"),
        _raw(Accelerator="", **{"a#": ""}),  # CPU-only row
        _raw(Category="open"),
    ]
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(rows))
    got = read_summary_json(path)
    assert [(r.scenario, r.count, r.tokens_per_s) for r in got] == [
        ("Offline", 16, 40000.0),
        ("Server", 16, 35000.5),
    ]
    # Precision comes from the stack, not from weight_data_types (spec 1.5).
    assert got[0].precision == "fp8" and got[0].stack == "trt-llm"


def test_missing_explicit_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_rows(tmp_path / "nope.json")


def test_builtin_table_carries_result_ids_and_calibrates() -> None:
    rows = builtin_rows()
    assert rows and all(r.result_id.startswith("v4.1-") for r in rows)
    report = calibrate(rows, "built-in")
    assert report.median_error("loo") < 0.15
    assert report.median_error("uncalibrated") > report.median_error("loo")


def test_default_path_points_at_the_shared_file() -> None:
    assert default_summary_path().name == "summary_results_v4.1.json"


def test_v41_leave_one_out_median_error_is_under_15_percent() -> None:
    if not V41.exists():
        pytest.skip("shared v4.1 summary_results.json is absent")
    report = default_report(V41.resolve())
    assert len(report.rows) > 100
    for scenario in ("Offline", "Server"):
        assert report.median_error("loo", scenario) < 0.15
    assert report.median_error("uncalibrated") > 2 * report.median_error("loo")
    lo, hi = report.error_band()
    assert lo < 1.0 < hi


def test_groups_without_rows_borrow_their_stack() -> None:
    eff = efficiency_for("mi325x", "fp8", stack="vllm")
    assert 0.05 <= eff.compute <= 1.0 and 0.3 < eff.server <= 1.5
