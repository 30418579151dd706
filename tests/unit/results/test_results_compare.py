"""Compare: selection, % of published, footnotes and labels; the built-in table."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.results_fixtures import write_run

from infermeter.errors import ConfigError
from infermeter.results.compare import UNVERIFIED, check_part, compare, run_figure
from infermeter.results.headline import headline_results
from infermeter.results.published import load_summary_file
from infermeter.results.runfolder import load_run

V41_FILE = (
    Path(__file__).resolve().parents[3]
    / ".."
    / "shared/data/mlperf/summary_results_v4.1.json"
)


def test_builtin_rows_match_the_published_file_exactly():
    if not V41_FILE.is_file():
        pytest.skip("shared/data/mlperf/summary_results_v4.1.json is absent")
    published = {
        (r.result_id, r.benchmark, r.scenario): r for r in load_summary_file(V41_FILE)
    }
    builtin = headline_results()
    assert len(builtin) >= 20
    for row in builtin:
        twin = published[(row.result_id, row.benchmark, row.scenario)]
        assert (row.value, row.unit, row.total_accelerators) == (
            twin.value,
            twin.unit,
            twin.total_accelerators,
        )
        assert (row.accelerator, row.accelerator_variant, row.power_w is None) == (
            twin.accelerator,
            twin.accelerator_variant,
            twin.power_w is None,
        )


def _figure(tmp_path, **kwargs):
    run = load_run(write_run(tmp_path / "run", benchmark="llama2-70b", **kwargs))
    return run, run_figure(run, gpu="h100-sxm", gpus=8)


def test_run_beside_builtin_rows_of_the_same_benchmark_and_scenario(tmp_path):
    run, figure = _figure(tmp_path, scenario="Offline")
    assert figure.unit == "tokens/s" and figure.label == UNVERIFIED
    assert figure.value == run.metrics["tokens_per_second"]
    result = compare(figure, headline_results())
    assert result.rows, "the built-in table has llama2-70b Offline rows"
    top = result.rows[0]
    assert top.published.result_id == "v4.1-0046"  # 8x H200 CTS, the fastest
    assert top.pct_of_published == pytest.approx(figure.value / 34864.2 * 100)
    assert top.pct_per_accelerator == pytest.approx(
        (figure.value / 8) / (34864.2 / 8) * 100
    )
    assert {r.published.scenario for r in result.rows} == {"Offline"}
    assert "result ID v4.1-0046" in result.footnotes[0]
    assert "closed division" in result.footnotes[0]
    assert "Retrieved 2026-11-26" in result.footnotes[0]
    assert any("not verified by MLCommons" in n for n in result.notes)
    assert any("derived" in n for n in result.notes)


def test_filter_by_result_id_and_accelerator(tmp_path):
    _, figure = _figure(tmp_path, scenario="Server")
    only = compare(figure, headline_results(), ids=["v4.1-0043"])
    assert [r.published.result_id for r in only.rows] == ["v4.1-0043"]
    assert only.rows[0].published.value == 21605.8
    h200 = compare(figure, headline_results(), accelerator="H200 SXM")
    ids = {r.published.result_id for r in h200.rows}
    assert ids and all(r.published.accelerator == "h200-sxm" for r in h200.rows)


def test_an_unknown_part_or_zero_gpus_is_an_error_not_an_empty_table(tmp_path):
    # Both used to exit 0: an unknown --accelerator with "import a round" (the
    # rows were there, the name was wrong), --gpus 0 read as "not given".
    run, figure = _figure(tmp_path, scenario="Server")
    with pytest.raises(
        ConfigError, match=r"Unknown accelerator 'nope'\. Known: .*b200"
    ):
        check_part("nope", headline_results())
    check_part("H200 SXM", headline_results())  # a spec part: no error
    with pytest.raises(ConfigError, match=r"--gpus must be >= 1 \(got 0\)"):
        run_figure(run, gpu="h100-sxm", gpus=0)
    # A known part without rows says so, and how to get some.
    none = compare(figure, headline_results(), accelerator="mi355x")
    assert none.rows == []
    assert any("rows of mi355x" in n and "--accelerator" in n for n in none.notes)


def test_previews_are_flagged_in_footnotes(tmp_path):
    _, figure = _figure(tmp_path, scenario="Offline")
    result = compare(figure, headline_results(), ids=["v4.1-0074"])
    assert "(preview)" in result.footnotes[0]


def test_no_rows_says_how_to_get_some(tmp_path):
    run = load_run(write_run(tmp_path / "r", benchmark="whisper", scenario="Offline"))
    result = compare(run_figure(run), headline_results())
    assert result.rows == []
    assert any("infermeter results import" in n for n in result.notes)


def test_run_gpu_comes_from_run_json_environment(tmp_path):
    gpu = {"name": "NVIDIA H100 80GB HBM3", "count": 2}
    run = load_run(write_run(tmp_path / "r", gpu=gpu, sut_kind="torch_llm"))
    figure = run_figure(run)
    assert (figure.accelerator, figure.accelerators) == ("h100-sxm", 2)


@pytest.mark.parametrize("kind", ["openai", "fake", "null"])
def test_an_endpoint_or_fake_run_is_not_given_the_hosts_gpus(tmp_path, kind):
    # A mock or fleet run on a machine with 8 H200s is not an 8x H200 system.
    gpu = {"name": "NVIDIA H200", "count": 8}
    run = load_run(write_run(tmp_path / "r", gpu=gpu, sut_kind=kind))
    figure = run_figure(run)
    assert (figure.accelerator, figure.accelerators) == (None, None)
    result = compare(figure, headline_results())
    assert result.best is None
    assert not any("Best match" in n for n in result.notes)


def test_a_sim_run_is_the_system_it_simulates(tmp_path):
    params = {"accelerator": "h100-sxm", "count": "8"}
    run = load_run(write_run(tmp_path / "r", sut_kind="sim", sut_params=params))
    figure = run_figure(run)
    assert (figure.accelerator, figure.accelerators) == ("h100-sxm", 8)
    assert figure.label.endswith("simulated")


def test_compare_run_reports_measured_tokens_per_joule(tmp_path):
    import json

    from infermeter.results.service import compare_run

    folder = write_run(tmp_path / "r", scenario="Offline")
    meta = json.loads((folder / "run.json").read_text())
    meta["power"] = {"available": True, "mean_w": 400.0, "energy_j": 4000.0}
    (folder / "run.json").write_text(json.dumps(meta))
    result = compare_run(folder, store=tmp_path / "s.sqlite", gpu="h100-sxm", gpus=1)
    tps = meta["metrics"]["tokens_per_second"]
    assert result.as_dict()["run_per_joule"] == pytest.approx(tps / 400.0)
    assert result.cost is not None and result.cost.gpus == 1


def test_a_bad_price_file_or_currency_is_an_error_without_a_gpu(tmp_path):
    # With no GPU known no cost is computed, and both used to be ignored silently.
    from infermeter.results.service import compare_run

    run = write_run(tmp_path / "r")
    assert compare_run(run, builtin=True).cost is None  # the run names no GPU
    with pytest.raises(ConfigError, match="Cannot read price file"):
        compare_run(run, prices=tmp_path / "none.toml", builtin=True)
    with pytest.raises(ConfigError, match="Unknown currency 'XYZ'"):
        compare_run(run, currency="XYZ", builtin=True)
