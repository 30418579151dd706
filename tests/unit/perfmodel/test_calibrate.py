"""Calibration: the published-row reader, the fit, shipped coefficients, wrong input."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.perfmodel.calibrate import (
    Validation,
    calibrate_rows,
    efficiency_for,
    leave_one_benchmark_out,
    leave_one_system_out,
    load_coefficients,
    load_results,
    predict_rows,
    shipped,
)
from infermeter.perfmodel.fit import (
    Coefficients,
    physics_grid,
    prepare,
    scenario_features,
    speed_features,
)
from infermeter.perfmodel.published import (
    PublishedRow,
    Rows,
    benchmark_of,
    read_rows,
    round_file,
    stack_of,
)
from tests.published_rows import published_row, repository_row

SHARED = round_file("v4.1").parent


def _write(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(rows))
    return path


def test_a_file_is_parsed_once_until_its_bytes_change(tmp_path: Path) -> None:
    path = _write(tmp_path, [published_row()])
    first = read_rows(path)
    assert read_rows(path) is first  # the same bytes: the parse is reused
    # Rewritten in place at the same length (the same size, and perhaps the same
    # modification time): the new value is read, not the cached one.
    _write(tmp_path, [published_row(Performance_Result=50000.0)])
    again = read_rows(path)
    assert [r.tokens_per_s for r in first.rows] == [40000.0]
    assert [r.tokens_per_s for r in again.rows] == [50000.0]
    path.write_text("[")
    with pytest.raises(ConfigError, match="Cannot read published results"):
        read_rows(path)


def test_reader_merges_duplicates_counts_nodes_and_keeps_every_llm_scenario(
    tmp_path: Path,
) -> None:
    rows = [
        published_row(),
        published_row(
            Model="llama2-70b-99.9", Performance_Result=39000.0
        ),  # -99 figure kept
        published_row(Scenario="Server", Performance_Result="35000.5"),  # string drift
        published_row(Scenario="Interactive", Performance_Result=20000.0),
        published_row(Model="resnet", Performance_Units="Samples/s"),  # not an LLM row
        published_row(Category="open"),  # not closed
        published_row(
            ID="5.1-0001",
            Model="llama3.1-8b",
            Scenario="Interactive",
            Performance_Units="Queries/s",
            Performance_Result=100.0,
        ),
    ]
    got = read_rows(_write(tmp_path, rows))
    by = {(r.result_id, r.scenario): r for r in got.rows}
    assert len(got.rows) == 4 and got.skipped == () and got.rounds == ("v5.1",)
    off = by[("5.1-9999", "Offline")]
    assert (off.count, off.tokens_per_s, off.nodes) == (16, 40000.0, 2)
    assert by[("5.1-9999", "Server")].tokens_per_s == 35000.5
    assert by[("5.1-9999", "Interactive")].tokens_per_s == 20000.0
    # Precision from the stack, not from weight_data_types (spec 1.5, gotcha 1).
    assert off.precision == "fp8" and off.stack == "trt-llm"
    assert "Queries/s" in by[("5.1-0001", "Interactive")].flags


def test_parts_variants_mixed_systems_and_cpus(tmp_path: Path) -> None:
    rows = [
        published_row(ID="a", Accelerator="NVIDIA H200-SXM-141GB-CTS"),
        published_row(
            ID="b",
            Accelerator="AMD Instinct MI355X 288GB HBM3e Power Cap 1000 W",
            Software="vLLM 0.9",
            weight_data_types="fp8",
        ),
        published_row(
            ID="c",
            Accelerator="AMD Instinct MI300X 192GB HBM3 (x32), AMD Instinct "
            "MI325X 256GB HBM3e (x16)",
            Nodes=6,
            Software="Mango LLMBoost, vllm",
        ),
        published_row(
            ID="d",
            Accelerator="",
            **{"a#": ""},
            Processor="INTEL(R) XEON(R) 6980P",
            host_processors_per_node=2,
            Nodes=1,
            Software="PyTorch",
            weight_data_types="INT8",
        ),
        published_row(ID="e", Accelerator="Acme Thinker 9000"),
        published_row(ID="f", System="NVIDIA H200 (8x H200-SXM-141GB, MaxQ, TensorRT)"),
    ]
    got = read_rows(_write(tmp_path, rows))
    by = {r.result_id: r for r in got.rows}
    assert by["a"].accelerator == "h200-sxm" and by["a"].variant == "CTS"
    assert by["b"].accelerator == "mi355x" and "1000 W power cap" in by["b"].variant
    assert by["b"].power == "capped" and by["f"].power == "capped"
    assert by["c"].accelerator == "mi300x+mi325x"
    assert by["c"].parts == (("mi300x", 32), ("mi325x", 16)) and by["c"].count == 48
    assert by["c"].stack == "llmboost" and by["c"].precision == "fp8"
    assert (by["d"].accelerator, by["d"].count, by["d"].precision) == (
        "xeon-6980p",
        2,
        "int8",
    )
    (skip,) = got.skipped
    assert skip.result_id == "e" and "no spec for accelerator" in skip.reason


def test_mixed_parts_joined_by_plus_or_counted_per_node_keep_every_part(
    tmp_path: Path,
) -> None:
    # v6.1: Cisco's "H200 x8 + MI350X x8" system read as 16 H200 (its rows 42-44 %
    # low), MangoBoost's "(x2x8) and ... (x2x8)" as 32 MI300X.
    rows = [
        published_row(
            ID="plus",
            Accelerator="NVIDIA H200-SXM-141GB + AMD Instinct MI350X 288GB HBM3e",
            **{"a#": 8},
        ),
        published_row(
            ID="nodes",
            Accelerator="AMD Instinct MI300X 192GB HBM3 (x2x8) and AMD Instinct "
            "MI355X 288GB HBM3e (x2x8)",
            Nodes=4,
        ),
        # 3 + 3 cannot share 7 evenly: not guessed.
        published_row(
            ID="odd",
            Accelerator="NVIDIA H200-SXM-141GB + AMD Instinct MI350X 288GB HBM3e",
            Nodes=1,
            **{"a#": 7},
        ),
    ]
    got = read_rows(_write(tmp_path, rows))
    by = {r.result_id: r for r in got.rows}
    assert by["plus"].parts == (("h200-sxm", 8), ("mi350x", 8))
    assert by["plus"].count == 16 and by["plus"].accelerator == "h200-sxm+mi350x"
    assert by["nodes"].parts == (("mi300x", 16), ("mi355x", 16))
    assert by["nodes"].count == 32
    assert [s.result_id for s in got.skipped] == ["odd"]


def test_an_fp4_checkpoint_row_on_a_part_without_fp4_keeps_its_fp4_weights(
    tmp_path: Path,
) -> None:
    # gpt-oss-120b ships MXFP4 experts; an H200 row that declares them ran them
    # weight-only (16-bit math), so its physics holds 4-bit experts: on one H200
    # they leave room for the KV cache that 8-bit experts fill. A checkpoint that
    # does not ship FP4 declared FP4 on H200 is read as the part's FP8.
    def row(rid: str, model: str) -> dict[str, object]:
        return published_row(
            ID=rid,
            Model=model,
            Accelerator="NVIDIA H200-SXM-141GB",
            Nodes=1,
            **{"a#": 1},
            weight_data_types="MXFP4",
        )

    got = read_rows(
        _write(tmp_path, [row("g", "gpt-oss-120b"), row("l", "llama2-70b-99")])
    )
    by = {r.result_id: r for r in got.rows}
    assert (by["g"].precision, by["l"].precision) == ("fp4", "fp8")
    fp4 = physics_grid(by["g"], np.asarray([1.0]))[0]
    fp8 = physics_grid(replace(by["g"], precision="fp8"), np.asarray([1.0]))[0]
    assert fp4 > 1.5 * fp8


def test_a_results_repository_summary_reads_like_the_website_file(
    tmp_path: Path,
) -> None:
    # mlcommons/inference_results_v6.1's summary.json: an object keyed "0", "1",
    # ... under other field names and without result IDs (the system directory
    # stands for one). Its rows read as the website file's do.
    records = {
        "0": repository_row(),
        "1": repository_row(Scenario="Server", Result=95000.0),
        "2": repository_row(
            Organization="Azure",
            Platform="Azure-GB200-NVL72_186GBx288",
            Model="deepseek-r1",
            MlperfModel="deepseek-r1",
            accelerator_model_name="NVIDIA GB200",
            accelerators_per_node=4,
            number_of_nodes=72,
            total_accelerators=288,
            framework="TensorRT 10.14, CUDA 13.1, TensorRT-LLM 1.2",
            Result=2091190.0,
        ),
        "3": repository_row(Model="dlrm-v3", MlperfModel="dlrm-v3", Units="Samples/s"),
        "4": repository_row(SystemType="edge", Scenario="SingleStream"),
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(records))
    got = read_rows(path)
    assert got.rounds == ("v6.1",) and got.skipped == ()
    by = {(r.result_id, r.scenario): r for r in got.rows}
    amd = by[("6.1-AMD/8xMI355X_2xEPYC_9575F", "Offline")]
    assert (amd.accelerator, amd.count, amd.stack, amd.precision) == (
        "mi355x",
        8,
        "vllm",
        "fp4",
    )
    assert by[("6.1-AMD/8xMI355X_2xEPYC_9575F", "Server")].tokens_per_s == 95000.0
    rack = by[("6.1-Azure/Azure-GB200-NVL72_186GBx288", "Offline")]
    assert (rack.accelerator, rack.count, rack.nodes, rack.benchmark) == (
        "gb200",
        288,
        72,
        "deepseek-r1",
    )
    assert rack.stack == "trt-llm" and rack.submitter == "Azure"
    assert len(got.rows) == 3  # the recommender and the edge rows are not LLM rows
    # v6.1 names TensorRT-LLM "TRTLLM" (beside a vLLM it ran for another model)
    # and Llama 3.1 8B by LoadGen's name.
    assert stack_of("TRTLLM-rubin, vLLM-CentML:mlperf-inf-mm") == "trt-llm"
    assert benchmark_of("llama3_1-8b") == "llama3.1-8b"


def test_rows_without_a_positive_result_or_a_count_are_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    # A NaN or infinite result was modelled (and turned every statistic into NaN);
    # a part with a count of 0 or "eight", or 0 nodes, was read as 1 accelerator.
    bad = {
        "nan": {"Performance_Result": float("nan")},
        "inf": {"Performance_Result": float("inf")},
        "neg": {"Performance_Result": -5.0},
        "zero-count": {"a#": 0},
        "text-count": {"a#": "eight"},
        "nan-count": {"a#": float("nan")},
        "zero-nodes": {"Nodes": 0},
        "half-node": {"Nodes": 0.5},
    }
    rows = [published_row(ID=rid, **over) for rid, over in bad.items()]
    rows.append(published_row(ID="ok", Nodes=None))  # absent nodes: one node
    got = read_rows(_write(tmp_path, rows))
    assert [(r.result_id, r.count, r.nodes) for r in got.rows] == [("ok", 8, 1)]
    reasons = {s.result_id: s.reason for s in got.skipped}
    assert set(reasons) == set(bad)
    for rid in ("nan", "inf", "neg"):
        assert reasons[rid].startswith("no positive numeric result")
    for rid in ("zero-count", "text-count", "nan-count", "zero-nodes", "half-node"):
        assert reasons[rid].startswith("no accelerator count")


def test_wrong_shape_json_is_one_line_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": []}')
    with pytest.raises(ConfigError, match=r"not an MLCommons summary_results\.json"):
        read_rows(bad)
    with pytest.raises(ConfigError, match="not found"):
        read_rows(tmp_path / "missing.json")
    bad.write_text("[1, 2")
    with pytest.raises(ConfigError, match="Cannot read"):
        read_rows(bad)


def test_a_file_without_llm_rows_is_an_error_and_empty_sets_are_json_null(
    tmp_path: Path,
) -> None:
    # A ResNet-only file used to "predict" 0 of 0 rows with exit 0 and print NaN
    # into --json, which strict parsers (jq) reject.
    vision = published_row(Model="resnet50", Performance_Units="Samples/s")
    with pytest.raises(ConfigError, match=r"holds no LLM results"):
        load_results([_write(tmp_path, [vision])])
    empty = Validation("none", "fit", ()).as_dict()
    assert empty["coverage"] is None
    assert empty["overall"]["median_abs_error"] is None
    json.loads(json.dumps(empty, allow_nan=False))


def test_predicting_rows_of_a_round_the_fit_read_is_labelled_in_sample(
    tmp_path: Path,
) -> None:
    # "predict v5.1 from a fit fitted on v4.1 + v5.1" printed the fit's own
    # residuals as if they were predictions.
    rows = load_results([_write(tmp_path, [published_row()])])
    both = predict_rows(rows, load_coefficients("v4.1+v5.1"))
    assert both.name.endswith("(in-sample)")
    assert "in-sample: the fit read v5.1" in both.as_dict()["notes"][0]
    earlier = predict_rows(rows, load_coefficients("v4.1"))
    assert not earlier.name.endswith("(in-sample)") and earlier.notes == ()


def _synthetic(speed: dict[str, float], scenario_derate: float) -> list[PublishedRow]:
    """Rows whose 'published' value is the physics at a known speed per stack."""
    rows = []
    for i, (acc, count, stack, prec) in enumerate(
        [
            ("h100-sxm", 8, "trt-llm", "fp8"),
            ("h200-sxm", 8, "trt-llm", "fp8"),
            ("mi300x", 8, "vllm", "fp8"),
            ("mi325x", 8, "vllm", "fp8"),
            ("h100-sxm", 4, "trt-llm", "fp8"),
            ("mi300x", 4, "vllm", "fp8"),
        ]
    ):
        for bench in ("llama2-70b", "mixtral-8x7b"):
            for scen in ("Offline", "Server"):
                probe = PublishedRow(
                    f"s-{i}",
                    "x",
                    acc,
                    count,
                    bench,
                    scen,
                    1.0,
                    stack,
                    prec,
                    "",
                    round="v4.1",
                )
                k = speed[stack]
                grid = physics_grid(probe)
                from infermeter.perfmodel.fit import LOG_SPEED

                value = float(np.exp(np.interp(math.log(k), LOG_SPEED, np.log(grid))))
                if scen == "Server":
                    value *= scenario_derate
                rows.append(
                    PublishedRow(
                        f"s-{i}",
                        "x",
                        acc,
                        count,
                        bench,
                        scen,
                        value,
                        stack,
                        prec,
                        "",
                        round="v4.1",
                    )
                )
    return rows


def test_fit_recovers_known_speeds_and_predicts_held_out_rows() -> None:
    rows = _synthetic({"trt-llm": 0.7, "vllm": 0.4}, scenario_derate=0.9)
    coef = calibrate_rows(rows[:-4])
    prepared, failed = prepare(rows[-4:])
    assert not failed
    from infermeter.perfmodel.fit import predict_log

    for p in prepared:
        assert math.exp(predict_log(p, coef)) == pytest.approx(
            p.row.tokens_per_s, rel=0.05
        )
    # A wrong guess (uncalibrated speed 1) is far off, so the check can fail.
    assert (
        abs(math.exp(prepared[0].log_grid[0]) / prepared[0].row.tokens_per_s - 1) > 0.3
    )


def test_leave_one_benchmark_out_hides_what_only_that_benchmark_shows() -> None:
    # Every Mixtral row runs at half the speed its systems reach on Llama 2 70B:
    # held out by system, the other systems' Mixtral rows teach it; held out by
    # benchmark, nothing does, and the physics over-predicts it about 2x.
    rows = [
        replace(r, tokens_per_s=r.tokens_per_s / 2)
        if r.benchmark == "mixtral-8x7b"
        else r
        for r in _synthetic({"trt-llm": 0.7, "vllm": 0.4}, scenario_derate=0.9)
    ]
    data = Rows(tuple(rows), (), ("v4.1",), "synthetic")

    def mixtral_error(v: Validation) -> float:
        errors = [p.error for p in v.predictions if p.row.benchmark == "mixtral-8x7b"]
        assert len(errors) == 12
        return float(np.median(errors))

    by_benchmark = leave_one_benchmark_out(data)
    assert len(by_benchmark.predictions) == len(rows)
    assert "leave-one-benchmark-out" in by_benchmark.name
    assert abs(mixtral_error(leave_one_system_out(data))) < 0.15
    assert mixtral_error(by_benchmark) > 0.6


def test_llmboost_inherits_what_vllm_rows_teach() -> None:
    # LLMBoost runs vLLM underneath: a fit that read only vLLM (and TRT-LLM) rows
    # gives it vLLM's speed (the family effect, learned from the vLLM rows), not
    # the global average a stack without rows gets.
    coef = calibrate_rows(_synthetic({"trt-llm": 0.7, "vllm": 0.3}, 0.9))
    assert coef.values["family:vllm"] < 0

    def compute(stack: str) -> float:
        eff = efficiency_for("mi300x", "fp8", stack=stack, coefficients=coef)
        return eff.compute

    # All of vLLM's speed but its systems' own (group) effects.
    assert compute("llmboost") == pytest.approx(compute("vllm"), rel=0.05)
    assert compute("llmboost") == pytest.approx(compute("sglang"))
    assert max(compute("vllm"), compute("llmboost")) < compute("other") * 0.8


def test_a_family_s_own_rows_carry_its_effect_once() -> None:
    # vLLM's rows name family:vllm and not also stack:vllm: two effects always
    # together would give vLLM twice the prior freedom of any other stack (in a
    # v4.1-only fit one slow vLLM system then moved both by -0.7).
    own = speed_features("mi300x", "vllm", "fp8", "llama2-70b")
    child = speed_features("mi300x", "llmboost", "fp8", "llama2-70b")
    assert "family:vllm" in own and "stack:vllm" not in own
    assert {"family:vllm", "stack:llmboost"} <= set(child)
    assert "stack:trt-llm" in speed_features("h100-sxm", "trt-llm", "fp8", "llama2-70b")


def test_what_cpu_rows_teach_a_stack_stays_with_cpus() -> None:
    # Every PyTorch row of v4.1 and v5.1 is a Xeon's, whose Server rows run at
    # about 0.6 of Offline (slow prefill under the TTFT bound). AMD GPUs run a
    # PyTorch harness in v6.1: they must not inherit that CPU derate.
    cpu = speed_features("xeon-6980p", "pytorch", "int8", "llama3.1-8b")
    gpu = speed_features("mi355x", "pytorch", "fp4", "llama2-70b")
    assert "stack:pytorch@cpu" in cpu and "stack:pytorch" in gpu
    assert "scenstack:Server|pytorch@cpu" in scenario_features(
        "Server", "pytorch", "llama3.1-8b", "xeon-6980p"
    )
    # The fit of the rounds where every PyTorch row is a CPU's (the shipped fit
    # reads v6.1 too, whose GPU PyTorch rows teach that stack's own effects).
    coef = load_coefficients("v4.1+v5.1")
    assert coef.values["scenstack:Server|pytorch@cpu"] < -0.3
    assert "scenstack:Server|pytorch" not in coef.values
    xeon = efficiency_for(
        "xeon-6980p", "int8", stack="pytorch", benchmark="llama3.1-8b"
    )
    mi355x = efficiency_for("mi355x", "fp4", stack="pytorch", benchmark="llama2-70b")
    assert xeon.server < 0.7 < mi355x.server


def test_interactive_takes_the_servers_derate_and_nothing_of_its_own() -> None:
    # An Interactive run is a Server run with tighter bounds: its derate is the
    # Server one (the benchmark's with it); the physics' bounds set it apart. An
    # Interactive effect in an older coefficients file is not read.
    coef = Coefficients(
        {
            "scenbench:Server|llama2-70b": -0.3,
            "scenbench:Interactive|llama2-70b": -0.1,
            "scen:Interactive": -0.2,
        },
        10,
        ("v4.1",),
        "test",
    )

    def derate(scenario: str, bench: str) -> float:
        return efficiency_for(
            "h100-sxm", "fp8", benchmark=bench, scenario=scenario, coefficients=coef
        ).server

    assert derate("Server", "llama2-70b") == pytest.approx(math.exp(-0.3))
    assert derate("Interactive", "llama2-70b") == pytest.approx(math.exp(-0.3))
    assert derate("Interactive", "llama3.1-8b") == pytest.approx(1.0)


def test_unknown_groups_borrow_their_parents() -> None:
    coef = Coefficients(
        {"global": -0.5, "family:vllm": -0.2, "arch:cdna4": 0.1}, 10, ("v4.1",), "test"
    )
    eff = efficiency_for("mi355x", "fp8", stack="vllm", coefficients=coef)
    assert eff.compute == pytest.approx(0.6 * math.exp(-0.6))
    assert eff.memory / eff.compute == pytest.approx(1.5)


def test_shipped_fits_are_labelled_with_the_rounds_read() -> None:
    fits = shipped()
    assert set(fits) >= {"v4.1", "v4.1+v5.1", "v4.1+v5.1+v6.1"}
    assert load_coefficients().rounds == ("v4.1", "v5.1", "v6.1")  # newest ships
    assert fits["v4.1"].rounds == ("v4.1",) and "v4.1" in fits["v4.1"].label
    assert load_coefficients("4.1").label == fits["v4.1"].label
    with pytest.raises(ConfigError, match=r"No fit named 'v9\.9'\. Shipped: v4\.1"):
        load_coefficients("v9.9")


@pytest.mark.skipif(
    not (SHARED / "summary_results_v4.1.json").exists(),
    reason="../shared MLPerf files are absent",
)
def test_shipped_coefficients_equal_a_fresh_fit_of_the_shared_files() -> None:
    # The package ships what `model calibrate --write` produces from the files.
    every = ["v4.1", "v5.1", "v6.1"]
    fits = (("v4.1", every[:1]), ("v4.1+v5.1", every[:2]), ("v4.1+v5.1+v6.1", every))
    for key, sources in fits:
        if not round_file(sources[-1]).exists():
            continue
        fresh = calibrate_rows(load_results(sources).rows)
        ship = shipped()[key]
        assert ship.rows == fresh.rows
        for name, value in fresh.values.items():
            assert ship.values[name] == pytest.approx(value, abs=1e-6), name


@pytest.mark.skipif(
    not (SHARED / "summary_results_v4.1.json").exists(),
    reason="../shared MLPerf files are absent",
)
def test_predicting_a_round_with_its_own_fit_beats_the_uncalibrated_roofline() -> None:
    rows = load_results(["v4.1"])
    calibrated = predict_rows(rows, shipped()["v4.1"]).overall()
    raw = predict_rows(rows, Coefficients({}, 0, (), "uncalibrated")).overall()
    assert calibrated.median < 0.12 < raw.median


def test_a_benchmark_s_first_round_server_level_stays_with_that_round() -> None:
    # DeepSeek-R1's v5.1 Server rows (its first round) ran at 0.45-0.58 of
    # Offline; the same rack ran Server 2.77x faster per GPU a round later on
    # software alone. Its own Server level is fitted for its first round only: a
    # plan (mature software) or a later round does not read it.
    first = scenario_features("Server", "trt-llm", "deepseek-r1", "b200", "v5.1")
    later = scenario_features("Server", "trt-llm", "deepseek-r1", "b200", "v6.1")
    assert "scenbench:Server|deepseek-r1|first" in first
    assert "scenbench:Server|deepseek-r1" in later
    assert not any(name.endswith("|first") for name in later)
    assert scenario_features("Interactive", "trt-llm", "deepseek-r1", "b200") == later
    # Llama 2 70B joined in v4.0: its v4.1 rows are its second round's.
    assert "scenbench:Server|llama2-70b" in scenario_features(
        "Server", "trt-llm", "llama2-70b", "h200-sxm", "v4.1"
    )
    coef = load_coefficients()
    assert coef.values["scenbench:Server|deepseek-r1|first"] < -0.3
    # The shipped fit reads v6.1, DeepSeek-R1's third round: its later level is
    # learned there, and far shallower (-0.14 against -0.68 in the first round).
    later_level = coef.values["scenbench:Server|deepseek-r1"]
    assert later_level > coef.values["scenbench:Server|deepseek-r1|first"] + 0.4
    assert "scenbench:Server|deepseek-r1" not in load_coefficients("v4.1+v5.1").values

    def derate(round_: str) -> float:
        return efficiency_for(
            "b200", "fp4", benchmark="deepseek-r1", coefficients=coef, round_=round_
        ).server

    assert derate("v5.1") < 0.6 * derate("")  # the plan's: no first-round level
    assert derate("v6.1") == pytest.approx(derate(""))


def test_a_vague_software_string_carries_no_stack_effect() -> None:
    # "ROCm" or "CUDA 12.2" names no serving stack: what one such system's rows
    # show must not land on every other row with a vague string (v4.1's 4x L40S
    # "CUDA 12.2" rows taught stack:other +0.44, inherited by v6.1's "ROCm" rows).
    assert stack_of("ROCm") == stack_of("CUDA 12.2") == "other"
    names = speed_features("mi355x", "other", "fp8", "llama2-70b")
    assert "stack:other@mi355x" in names and "stack:other" not in names
    derate = scenario_features("Server", "other", "llama2-70b", "mi355x")
    assert "scenstack:Server|other@mi355x" in derate
    for coef in shipped().values():
        assert "stack:other" not in coef.values, coef.label
    assert "stack:other@l40s" in shipped()["v4.1"].values
