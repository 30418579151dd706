"""CLI: infermeter plan and infermeter model calibrate|specs through CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from tests.cli_main import flat, run_main
from tests.published_rows import published_row

runner = CliRunner()


def test_plan_json_lists_options_and_infeasible_types() -> None:
    res = runner.invoke(
        app,
        [
            "plan",
            "--accelerator",
            "h100-sxm",
            "--accelerator",
            "l4",
            "--tokens-per-user",
            "60",
            "--isl",
            "1000",
            "--osl",
            "300",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    by = {o["accelerator"]: o for o in data["options"]}
    assert by["h100-sxm"]["feasible"] and by["h100-sxm"]["tp"] >= 1
    assert not by["l4"]["feasible"] and "ms per token" in by["l4"]["reason"]
    assert "tighter than the TPOT bound" in data["note"]  # 17 ms < 40 ms published
    assert data["lengths_note"] is None  # --isl given
    assert data["evidence_note"] is None  # FP8 H100 and the L4 rest on published rows


def test_plan_says_when_a_part_has_no_publishedpublished_row() -> None:
    # The v4.1 + v5.1 fit read no MI355X row (the shipped one reads v6.1's).
    args = ["--accelerator", "mi355x", "--precision", "fp8", "--fit", "v4.1+v5.1"]
    res = runner.invoke(app, ["plan", *args])
    assert res.exit_code == 0, res.output
    assert "note: thin evidence: the fit read no published row of mi355x" in flat(
        res.output
    )


def test_plan_says_when_the_input_length_is_an_assumption() -> None:
    # Llama 2 70B's prompt lengths are measured (222.3 tokens a sample); Llama 3.1
    # 405B's are not published in the sources read, so its default is assumed.
    measured = runner.invoke(app, ["plan", "--accelerator", "h200-sxm", "--json"])
    assert measured.exit_code == 0, measured.output
    data = json.loads(measured.output)
    assert data["targets"]["isl"] == 222 and data["lengths_note"] is None
    args = ["plan", "--model", "llama3.1-405b", "--accelerator", "b200"]
    assumed = runner.invoke(app, [*args, "--users", "4"])
    assert assumed.exit_code == 0, assumed.output
    assert "9,400 tokens is not published" in assumed.output.replace("\n", " ")
    given = runner.invoke(app, [*args, "--users", "4", "--isl", "2000", "--json"])
    assert given.exit_code == 0 and json.loads(given.output)["lengths_note"] is None


def test_plan_refuses_zero_token_lengths_instead_of_using_the_mean() -> None:
    # --isl 0 used to read as "not given": the plan silently used the benchmark's
    # mean prompt and exited 0.
    for flag in ("--isl", "--osl"):
        result = run_main("plan", "--accelerator", "h100-sxm", flag, "0")
        assert result.code == 2, result.output
        assert "--isl and --osl must be >= 1" in result.stderr
        assert "Plan" not in result.stdout


def test_plan_says_an_aggregated_plan_at_interactive_tpot_has_pools_to_try() -> None:
    # At Interactive-tight TPOT pools keep prefill out of the decode steps (4
    # accelerators here against 8 aggregated), so an aggregated-only plan there
    # says --disaggregated exists; P/D plans and Server-like targets carry no note.
    base = ["plan", "--model", "llama2-70b", "--users", "100", "--isl", "1000"]
    base += ["--osl", "300", "--accelerator", "h100-sxm", "--precision", "fp8"]
    tight = runner.invoke(app, [*base, "--tokens-per-user", "30", "--json"])
    assert tight.exit_code == 0, tight.output
    data = json.loads(tight.output)
    assert "--disaggregated" in data["pools_note"]
    assert data["options"][0]["accelerators"] == 8
    pools = runner.invoke(
        app, [*base, "--tokens-per-user", "30", "--disaggregated", "--json"]
    )
    assert pools.exit_code == 0, pools.output
    data = json.loads(pools.output)
    assert data["pools_note"] is None and data["options"][0]["accelerators"] == 4
    loose = runner.invoke(app, [*base, "--tokens-per-user", "10", "--json"])
    assert json.loads(loose.output)["pools_note"] is None
    table = runner.invoke(app, [*base, "--tokens-per-user", "30"])
    assert "note: aggregated only" in table.output


def test_plan_table_and_bad_input() -> None:
    ok = runner.invoke(app, ["plan", "--accelerator", "NVIDIA H200"])
    assert ok.exit_code == 0 and "h200-sxm" in ok.output and "derived" in ok.output
    unknown = runner.invoke(app, ["plan", "--accelerator", "h300"])
    assert unknown.exit_code != 0
    assert "Unknown accelerator 'h300'. Known:" in str(unknown.exception)
    bad = runner.invoke(app, ["plan", "--users", "0"])
    assert bad.exit_code != 0
    assert "--users must be >= 1" in str(bad.exception)


def test_plan_round_option_and_its_note() -> None:
    args = ["plan", "--model", "deepseek-r1", "--accelerator", "b200", "--json"]
    args += ["--users", "2000", "--tokens-per-user", "12.5"]  # 25,000 tokens/s
    today = json.loads(runner.invoke(app, args).output)
    assert "--round v5.1" in today["first_round_note"]
    then = runner.invoke(app, [*args, "--round", "v5.1"])
    assert then.exit_code == 0, then.output
    data = json.loads(then.output)
    assert data["first_round_note"] is None
    n = [d["options"][0]["accelerators"] for d in (today, data)]
    assert n[1] > n[0]  # v5.1's software: its first-round Server level applies
    bad = run_main("plan", "--model", "deepseek-r1", "--round", "5.1")
    assert bad.code == 2 and bad.stdout == ""
    assert bad.stderr.strip().count("\n") == 0 and "Unknown round '5.1'" in bad.stderr


def test_model_predict_and_calibrate_on_a_small_file(tmp_path: Path) -> None:
    rows = []
    for rid, acc, count, value in (
        ("5.1-0001", "NVIDIA H100-SXM-80GB", 8, 30000.0),
        ("5.1-0002", "NVIDIA H200-SXM-141GB", 8, 35000.0),
        ("5.1-0003", "Acme Thinker 9000", 8, 1000.0),
    ):
        for scenario, scale in (("Offline", 1.0), ("Server", 0.95)):
            rows.append(
                {
                    "ID": rid,
                    "version": "v5.1",
                    "Category": "closed",
                    "Suite": "datacenter",
                    "Model": "llama2-70b-99",
                    "Scenario": scenario,
                    "Nodes": 1,
                    "Accelerator": acc,
                    "a#": count,
                    "Software": "TensorRT 10.11",
                    "weight_data_types": "fp8",
                    "Performance_Result": value * scale,
                    "Performance_Units": "Tokens/s",
                }
            )
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(rows))
    res = runner.invoke(
        app, ["model", "predict", "--results", str(path), "--fit", "v4.1", "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert (data["rows"], data["modelled"]) == (6, 4)
    assert data["not_modelled"][0]["reason"].startswith("no spec for accelerator")
    assert data["fit"] == "fitted on v4.1" and "derived" in data["label"]
    table = runner.invoke(app, ["model", "predict", "--results", str(path)])
    assert table.exit_code == 0 and "not modelled: 5.1-0003" in table.output
    out = tmp_path / "fits.json"
    fit = runner.invoke(
        app,
        [
            "model",
            "calibrate",
            "--results",
            str(path),
            "--holdout",
            "none",
            "--write",
            str(out),
        ],
    )
    assert fit.exit_code == 0, fit.output
    assert set(json.loads(out.read_text())["fits"]) == {"v5.1"}
    again = runner.invoke(
        app, ["model", "predict", "--results", str(path), "--fit", str(out), "--json"]
    )
    assert json.loads(again.output)["fit"] == "fitted on v5.1"
    one = runner.invoke(
        app, ["model", "calibrate", "--results", str(path), "--holdout", "benchmark"]
    )
    assert one.exit_code != 0 and "at least two" in str(one.exception)
    assert "(llama2-70b)" in str(one.exception)


def test_wrong_shape_json_is_a_one_line_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    res = runner.invoke(app, ["model", "predict", "--results", str(bad)])
    assert res.exit_code != 0
    assert "not an MLCommons summary_results.json" in str(res.exception)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"fits": 3}', "'fits' must map a fit's name"),
        ('{"fits": {}}', "holds no fit"),
        ('{"fits": {"v4.1": [1]}}', "'fits' must map a fit's name to an object"),
        (
            '{"label": "x", "values": {}}',
            "needs label, rounds, rows and numeric values",
        ),
        (
            '{"label": "x", "rounds": [], "rows": 0, "values": {"global": "fast"}}',
            "numeric",
        ),
    ],
)
def test_a_malformed_coefficients_file_says_so_in_one_line(
    tmp_path: Path, text: str, says: str
) -> None:
    # A JSON object is a coefficients file: its own error, never an internal error
    # or "not a summary_results.json" (the refit reading it as results).
    path = tmp_path / "fits.json"
    path.write_text(text)
    results = tmp_path / "summary.json"
    results.write_text(json.dumps([published_row()]))
    for cmd in (
        ("model", "predict", "--results", str(results), "--fit", str(path)),
        ("plan", "--fit", str(path)),
    ):
        got = run_main(*cmd)
        assert got.code == 2, got.stderr
        lines = got.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), got.stderr
        assert says in flat(got.stderr) and str(path) in flat(got.stderr)


@pytest.mark.parametrize("existing", ['{"fits": 3}', "[1]", '{"fits": {"x": 1}}'])
def test_calibrate_write_refuses_to_merge_into_a_file_that_is_not_coefficients(
    tmp_path: Path, existing: str
) -> None:
    # A JSON list was an internal AttributeError; a 'fits' entry that is not a
    # fit was kept beside the new one, and the file then failed to load.
    results = tmp_path / "summary.json"
    results.write_text(
        json.dumps(
            [
                published_row(),
                published_row(Scenario="Server"),
                published_row(ID="5.1-0002", Accelerator="NVIDIA H200-SXM-141GB"),
            ]
        )
    )
    target = tmp_path / "fits.json"
    target.write_text(existing)
    got = run_main(
        "model",
        "calibrate",
        "--results",
        str(results),
        "--holdout",
        "none",
        "--write",
        str(target),
    )
    assert got.code == 2, got.stderr
    assert "'fits' must map a fit's name to an object" in flat(got.stderr)
    assert len(got.stderr.strip().splitlines()) == 1
    assert target.read_text() == existing  # nothing lost


def test_model_specs_lists_sources() -> None:
    res = runner.invoke(app, ["model", "specs", "--json"])
    assert res.exit_code == 0
    assert {r["key"] for r in json.loads(res.output)} >= {
        "h100-sxm",
        "mi300x",
        "tpu-v6e",
    }
    models = runner.invoke(app, ["model", "specs", "--kind", "models"])
    assert models.exit_code == 0 and "llama2-70b" in models.output
    wl = runner.invoke(app, ["model", "specs", "--kind", "workloads", "--json"])
    assert wl.exit_code == 0, wl.output
    by = {r["key"]: r for r in json.loads(wl.output)}
    assert by["llama2-70b"]["isl_mean"] == 222.3 and not by["llama2-70b"]["isl_assumed"]
    assert by["llama3.1-405b"]["isl_assumed"] and by["deepseek-r1"]["source"]
    bad = runner.invoke(app, ["model", "specs", "--kind", "parts"])
    assert bad.exit_code != 0 and "Known: accelerators, models, workloads" in str(
        bad.exception
    )


def test_model_specs_tables_never_cut_a_value_at_80_columns() -> None:
    # Rich shortens cells to fit the terminal; "2000…" for a 2000 ms bound, or
    # "9400…" for an input length, would be a wrong number, not a short one.
    for kind in ("accelerators", "models", "workloads"):
        res = runner.invoke(app, ["model", "specs", "--kind", kind], terminal_width=80)
        assert res.exit_code == 0, res.output
        assert "…" not in res.output, res.output
        assert max(len(line) for line in res.output.splitlines()) <= 80
    wl = runner.invoke(app, ["model", "specs", "--kind", "workloads"])
    row = next(ln for ln in wl.output.splitlines() if "llama3.1-405b" in ln)
    assert "9400*" in row and "4500" in row and "684.68" in row
    assert "assumed input length" in wl.output


def test_every_new_command_has_examples_in_help() -> None:
    for args in (
        ["plan"],
        ["model", "calibrate"],
        ["model", "predict"],
        ["model", "specs"],
    ):
        res = runner.invoke(app, [*args, "--help"])
        assert res.exit_code == 0 and "Examples" in res.output


def test_plan_simulate_checks_each_option_in_the_serving_simulator() -> None:
    args = ["plan", "--users", "200", "--tokens-per-user", "25", "--ttft-ms", "1000"]
    args += ["--isl", "4000", "--osl", "300", "--accelerator", "h200-sxm"]
    res = runner.invoke(app, [*args, "--simulate", "600", "--json"])
    assert res.exit_code == 0, res.output
    (opt,) = json.loads(res.output)["options"]
    sim = opt["simulated"]
    assert sim["requests"] == 600 and sim["seed"] == 1
    # One replica at its planned load holds the targets in the simulator too.
    assert 0 < sim["ttft_p99_ms"] <= 1.1 * 1000 and 0 < sim["tpot_p99_ms"] <= 40
    table = runner.invoke(app, [*args, "--simulate", "600"])
    assert table.exit_code == 0 and "one replica at its planned load" in table.output
    bad = runner.invoke(app, [*args, "--simulate", "-1"])
    assert bad.exit_code != 0 and "--simulate must be >= 0" in str(bad.exception)


@pytest.mark.parametrize("name", ["fit.json", "fit.bin"])
def test_a_binary_fit_file_is_a_one_line_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(bytes(range(256)) * 4)  # not UTF-8
    results = tmp_path / "summary.json"
    results.write_text(json.dumps([published_row()]))
    res = run_main("model", "predict", "--results", str(results), "--fit", str(path))
    assert res.code == 2 and res.stdout == ""
    assert res.stderr.strip().count("\n") == 0 and str(path) in res.stderr
    assert "internal error" not in res.stderr
