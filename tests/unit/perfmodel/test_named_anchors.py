"""Every prediction names its kind and its anchors by result ID, in `model predict`
and in `plan`, and a named fit's anchors come from its rounds only (issue 36)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.perfmodel.published import round_file

runner = CliRunner()
pytestmark = pytest.mark.skipif(
    not all(round_file(r).exists() for r in ("v4.1", "v5.1")),
    reason="../shared MLPerf summary files (v4.1, v5.1) are absent",
)


def test_model_predict_names_kind_and_anchors_from_the_fits_rounds_only():
    target = str(round_file("v5.1"))
    res = runner.invoke(
        app, ["model", "predict", "--results", target, "--fit", "v4.1", "--json"]
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["per_row"]
    kinds = {r["kind"] for r in rows}
    assert kinds == {"anchored", "modelled"}
    for r in rows:
        # anchored rows name result IDs of v4.1 only; modelled rows name none
        assert (r["kind"] == "anchored") == bool(r["anchors"])
        assert all(a["round"] == "v4.1" and a["result_id"] for a in r["anchors"])
    # A benchmark v4.1 never ran is modelled.
    assert {r["kind"] for r in rows if r["benchmark"] == "deepseek-r1"} == {"modelled"}


def test_plan_names_each_options_basis_and_anchors():
    # 10 tokens/s a user: 100 ms a token, a Server plan (v4.1 has no Interactive)
    args = ["plan", "--model", "llama2-70b", "--accelerator", "h100-sxm"]
    args += ["--tokens-per-user", "10"]
    res = runner.invoke(app, [*args, "--fit", "v4.1", "--json"])
    assert res.exit_code == 0, res.output
    (opt,) = json.loads(res.output)["options"]
    assert opt["basis"] == "anchored" and opt["anchor_count"] >= len(opt["anchors"]) > 0
    assert all(a.startswith("v4.1-") for a in opt["anchors"])
    text = runner.invoke(app, [*args, "--fit", "v4.1"])
    assert text.exit_code == 0, text.output
    assert f"h100-sxm: anchored on {opt['anchors'][0]}" in text.output.replace(
        "\n", " "
    )
    modelled = runner.invoke(
        app,
        ["plan", "--model", "deepseek-r1", "--accelerator", "b200", "--fit", "v4.1"],
    )
    assert modelled.exit_code == 0, modelled.output
    assert "b200: modelled (no published row of deepseek-r1" in " ".join(
        modelled.output.split()
    )
