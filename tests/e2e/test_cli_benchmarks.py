"""``infermeter benchmarks`` lists the registry and shows one benchmark's rules."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.workloads.conf_rules import conf_models
from infermeter.workloads.registry import unregister_custom

runner = CliRunner()


def test_list_shows_every_benchmark() -> None:
    result = runner.invoke(app, ["benchmarks"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name in ("llama2-70b", "resnet50", "3d-unet", "gpt-oss-120b"):
        assert name in result.output


def test_list_names_every_conf_model() -> None:
    result = runner.invoke(app, ["benchmarks"], terminal_width=200)
    assert result.exit_code == 0, result.output
    cells = {
        cell.strip() for line in result.output.splitlines() for cell in line.split("│")
    }
    missing = [m for m in conf_models() if m not in cells]
    assert missing == []


def test_show_new_benchmark_with_sources() -> None:
    result = runner.invoke(app, ["benchmarks", "show", "whisper"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "1633" in result.output
    assert "96.9536" in result.output  # (100 - 2.0671) * 0.99
    assert "checker v6.0" in result.output


def test_list_json() -> None:
    result = runner.invoke(app, ["benchmarks", "--json"])
    assert result.exit_code == 0
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["llama3.1-8b"]["tpot_ms"] == 100
    assert rows["llama3.1-8b"]["interactive_tpot_ms"] == 30


def test_show_prints_rules() -> None:
    result = runner.invoke(
        app, ["benchmarks", "show", "llama2-70b"], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert "2000 ms / 200 ms" in result.output
    assert "450 ms / 40 ms" in result.output
    assert "43.9869" in result.output
    assert "323.8950" in result.output


def test_show_json_interactive_alias() -> None:
    result = runner.invoke(
        app, ["benchmarks", "show", "llama3_1-8b-interactive", "--json"]
    )
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert (data["ttft_ms"], data["tpot_ms"]) == (500, 30)


def test_show_unknown_is_config_error() -> None:
    result = runner.invoke(app, ["benchmarks", "show", "nope"])
    assert result.exit_code != 0
    assert "Unknown benchmark 'nope'" in str(result.exception)


def test_custom_file(tmp_path) -> None:
    path = tmp_path / "b.toml"
    path.write_text(
        '[[benchmark]]\nname = "tiny"\nconf_models = ["tiny"]\ntask = "t"\n'
        'dataset = "d"\ndataset_format = "jsonl"\nscenarios = ["Offline"]\n'
        "performance_sample_count = 8\n"
    )
    try:
        result = runner.invoke(app, ["benchmarks", "--file", str(path), "show", "tiny"])
        assert result.exit_code == 0, result.output
        assert "tiny" in result.output
    finally:
        unregister_custom()
