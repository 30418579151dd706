"""CLI: infermeter plan and infermeter model calibrate|specs through CliRunner."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from infermeter.cli.main import app

runner = CliRunner()


def test_plan_json_lists_options_and_infeasible_types() -> None:
    res = runner.invoke(
        app,
        [
            "plan",
            "--accelerator",
            "h100-sxm",
            "--accelerator",
            "tpu-v5e",
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
    assert by["h100-sxm"]["feasible"] and by["h100-sxm"]["accelerators"] == 2
    assert not by["tpu-v5e"]["feasible"]


def test_plan_table_and_bad_input() -> None:
    ok = runner.invoke(app, ["plan", "--accelerator", "h200"])
    assert ok.exit_code == 0 and "h200" in ok.output and "derived" in ok.output
    bad = runner.invoke(app, ["plan", "--users", "0"])
    assert bad.exit_code != 0
    assert "--users must be >= 1" in str(bad.exception)


def test_model_calibrate_reports_both_errors() -> None:
    res = runner.invoke(app, ["model", "calibrate", "--no-rows", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["loo_median_abs_error"] < 0.15
    assert data["uncalibrated_median_abs_error"] > data["loo_median_abs_error"]
    assert all(r["result_id"].startswith("v4.1-") for r in data["per_row"])


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


def test_every_new_command_has_examples_in_help() -> None:
    for args in (["plan"], ["model", "calibrate"], ["model", "specs"]):
        res = runner.invoke(app, [*args, "--help"])
        assert res.exit_code == 0 and "Examples" in res.output
