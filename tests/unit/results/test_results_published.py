"""Published results: the v4.1 file read in place, schema drift of later rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.one_line import one_line_error
from tests.published_rows import repository_row

from infermeter.errors import ConfigError
from infermeter.results.published import load_summary_file, parse_summary, screen

V41 = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "mlperf"
V41_FILE = V41 / "summary_results_v4.1.json"


@pytest.fixture(scope="module")
def v41():
    if not V41_FILE.is_file():
        pytest.skip("shared/data/mlperf/summary_results_v4.1.json is absent")
    return load_summary_file(V41_FILE, retrieved_at="2026-11-26")


def _find(rows, result_id, benchmark, scenario):
    (row,) = [
        r
        for r in rows
        if (r.result_id, r.benchmark, r.scenario) == (result_id, benchmark, scenario)
    ]
    return row


@pytest.mark.parametrize(
    ("result_id", "benchmark", "scenario", "value", "unit", "accelerator"),
    [
        ("v4.1-0043", "llama2-70b-99", "Offline", 24524.9, "tokens/s", "h100-sxm"),
        ("v4.1-0046", "llama2-70b-99", "Offline", 34864.2, "tokens/s", "h200-sxm"),
        ("v4.1-0046", "llama2-70b-99", "Server", 32789.7, "tokens/s", "h200-sxm"),
        ("v4.1-0027", "resnet", "Server", 681328.0, "queries/s", "h200-sxm"),
    ],
)
def test_v41_gives_the_published_figures_exactly(
    v41, result_id, benchmark, scenario, value, unit, accelerator
):
    row = _find(v41, result_id, benchmark, scenario)
    assert row.value == value
    assert row.unit == unit
    assert row.total_accelerators == 8
    assert row.accelerator == accelerator
    assert (row.round, row.division, row.availability) == (
        "v4.1",
        "closed",
        "available",
    )
    assert row.source.startswith("summary_results_v4.1.json sha256:")
    assert row.retrieved_at == "2026-11-26"


def test_v41_rounds_to_the_seed_figures(v41):
    assert round(_find(v41, "v4.1-0043", "llama2-70b-99", "Offline").value) == 24525
    assert round(_find(v41, "v4.1-0046", "llama2-70b-99", "Offline").value) == 34864
    assert round(_find(v41, "v4.1-0046", "llama2-70b-99", "Server").value) == 32790


def test_v41_power_cap_variant_is_kept(v41):
    cts = _find(v41, "v4.1-0046", "llama2-70b-99", "Offline")
    assert (cts.accelerator, cts.accelerator_variant) == ("h200-sxm", "CTS")
    mi300 = _find(v41, "v4.1-0002", "llama2-70b-99", "Offline")
    assert (mi300.accelerator, mi300.accelerator_variant) == (
        "mi300x",
        "",
    )  # 750 W is stock


def test_v41_duplicates_previews_power_and_unit_bugs(v41):
    dup = _find(v41, "v4.1-0043", "llama2-70b-99.9", "Offline")
    assert dup.duplicate and dup.base_benchmark == "llama2-70b"
    assert not _find(v41, "v4.1-0043", "llama2-70b-99", "Offline").duplicate
    assert any(r.preview for r in v41)
    maxq = _find(v41, "v4.1-0049", "llama2-70b-99", "Offline")
    assert maxq.power_w == pytest.approx(6152.98, abs=0.01)
    bug = _find(v41, "v4.1-0110", "llama2-70b-99.9", "Offline")
    assert "token benchmark" in bug.flags and bug.value == 1871.84
    cpu = next(r for r in v41 if r.accelerator_raw == "")
    assert cpu.total_accelerators == 0 and cpu.per_accelerator is None


def _row(**extra):
    row = {
        "ID": "v6.0-0101",
        "Submitter": "AMD",
        "Availability": "available",
        "Category": "closed",
        "Suite": "datacenter",
        "System": "87xMI355X",
        "Model": "llama2-70b-99",
        "Scenario": "Offline",
        "Nodes": 11,
        "Accelerator": "AMD Instinct MI355X Power Cap 1000 W",
        "a#": 8,
        "compliance": "closed",
        "version": "v6.0",
        "inferred": 0,
        "Performance_Result": "100000.5",
        "Performance_Units": "Tokens/s",
    }
    row.update(extra)
    return row


def test_v6_total_accelerators_wins_over_a_hash_times_nodes():
    (row,) = parse_summary(
        [_row(**{"Total Accelerators": 87})], source="s", retrieved_at="d"
    )
    assert row.total_accelerators == 87
    assert row.value == 100000.5  # string drift
    assert (row.accelerator, row.accelerator_variant) == ("mi355x", "1000 W power cap")


def test_v5_int_counts_and_heterogeneous_systems():
    rows = parse_summary(
        [
            _row(ID="v5.1-0001", version="v5.1", compliance=1, Nodes=2, **{"a#": 8}),
            _row(ID="v5.1-0002", Accelerator="MI300X (x32), MI325X (x16)"),
        ],
        source="s",
        retrieved_at="d",
    )
    assert [r.total_accelerators for r in rows] == [16, 48]
    assert rows[0].round == "v5.1"


def test_a_results_repository_summary_imports_like_the_website_file():
    # mlcommons/inference_results_v6.1's summary.json: an object of records under
    # other field names, without result IDs (the system directory stands for one).
    rows = parse_summary(
        {
            "0": repository_row(),
            "1": repository_row(
                Model="wan-2.2-t2v-a14b",
                Scenario="SingleStream",
                Units="Latency (s)",
                Result=20.6,
            ),
        },
        source="s",
        retrieved_at="d",
    )
    llm, video = rows
    assert (llm.result_id, llm.round, llm.division, llm.suite) == (
        "6.1-AMD/8xMI355X_2xEPYC_9575F",
        "v6.1",
        "closed",
        "datacenter",
    )
    assert (llm.submitter, llm.total_accelerators, llm.unit, llm.value) == (
        "AMD",
        8,
        "tokens/s",
        100000.0,
    )
    assert llm.software.startswith("vLLM") and llm.accelerator_raw.startswith("AMD")
    assert (video.unit, video.value) == ("ms", 20600.0)


def test_v5_interactive_unit_bug_is_flagged():
    rows = parse_summary(
        [
            _row(Model="llama3.1-8b", Scenario="Interactive"),
            _row(
                ID="x",
                Model="llama3.1-8b",
                Scenario="Interactive",
                Performance_Units="Queries/s",
            ),
        ],
        source="s",
        retrieved_at="d",
    )
    assert rows[0].flags == "" and "queries/s" in rows[1].flags


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"ID": "v4.1-0001", "Model": "resnet"', "not valid JSON"),
        ('{"results": []}', "not an MLCommons summary_results.json"),
        ('[{"name": "x"}]', "lacks ID"),
        ("[]", "not an MLCommons"),
    ],
)
def test_bad_files_are_one_line_config_errors(tmp_path, content, message):
    assert message in one_line_error(load_summary_file, tmp_path / "bad.json", content)


@pytest.mark.parametrize("value", ["n/a", float("nan"), float("inf"), 0, -5.0])
def test_a_result_that_is_not_a_positive_number_is_named(value):
    # NaN reached the store as an internal IntegrityError; infinities and
    # negative throughputs were imported as published figures.
    with pytest.raises(ConfigError, match="a published result is a positive number"):
        parse_summary([_row(Performance_Result=value)], source="s", retrieved_at="d")


def test_non_finite_counts_and_power_read_as_absent():
    (row,) = parse_summary(
        [_row(Nodes=float("nan"), Power_Result=float("inf"), Power_Units="Watts")],
        source="s",
        retrieved_at="d",
    )
    assert row.nodes == 1 and row.power_w is None


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read"):
        load_summary_file(tmp_path / "nope.json")


def test_round_trip_of_written_file(tmp_path):
    path = tmp_path / "summary_results.json"
    path.write_text(json.dumps([_row()]))
    (row,) = load_summary_file(path)
    assert row.source.startswith("summary_results.json sha256:")
    assert row.total_accelerators == 88  # a# x Nodes when no total is given


def test_import_leaves_out_rows_without_a_count_and_never_overwrites_a_key():
    good = _row(Scenario="Server")
    rows = parse_summary(
        [
            good,
            _row(Scenario="Server", **{"a#": "", "Performance_Result": 5.0}),
            _row(Scenario="Server", Performance_Result=7.0),  # same key
            _row(Accelerator="", **{"a#": ""}),  # a CPU-only row: kept
        ],
        source="s",
        retrieved_at="d",
    )
    kept, dropped = screen(rows)
    assert [(r.scenario, r.value) for r in kept] == [
        ("Server", 100000.5),
        ("Offline", 100000.5),
    ]
    assert len(dropped) == 2
    assert "without a count" in dropped[0] and "repeats an earlier row" in dropped[1]
