"""One part name everywhere, and the import and report details of issue 12."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.results_fixtures import write_run
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.errors import ConfigError
from infermeter.formatting import format_figure, format_number
from infermeter.perfmodel.planner import prices
from infermeter.results.accelerators import normalise, resolve_gpu
from infermeter.results.compare import compare, run_figure
from infermeter.results.console import comparison_table
from infermeter.results.cost import load_prices
from infermeter.results.published import parse_summary
from infermeter.results.runfolder import load_run

runner = CliRunner()


@pytest.mark.parametrize(
    ("raw", "name", "variant"),
    [
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000", ""),
        ("AMD Instinct MI355X (x87)", "mi355x", ""),
        (
            "AMD Instinct MI355X 288GB HBM3e Power Cap 1000 W",
            "mi355x",
            "1000 W power cap",
        ),
        ("NVIDIA H200-SXM-141GB-CTS", "h200-sxm", "CTS"),
        ("Virtualized NVIDIA H200-SXM-141GB", "h200-sxm", "virtualized"),
        ("NVIDIA H200", "h200-sxm", ""),  # NVML's device name
        ("NVIDIA B200-SXM-180GB", "b200", ""),
        ("UntetherAI speedAI240 Slim", "speedAI240 Slim", ""),  # no spec: kept whole
        ("Intel(R) Arc Pro(R) B70", "arc-pro-b70", ""),  # trademark marks anywhere
        ("Intel® Arc™ Pro B70", "arc-pro-b70", ""),
    ],
)
def test_one_name_per_part_with_its_variant(raw: str, name: str, variant: str) -> None:
    acc = normalise(raw)
    assert (acc.name, acc.variant) == (name, variant)
    assert "( )" not in acc.label


def test_mixed_systems_are_named_as_such() -> None:
    acc = normalise("AMD Instinct MI300X 192GB HBM3 (x32), AMD Instinct MI325X (x16)")
    assert acc.name == "mi300x+mi325x"
    assert acc.variant == "32x mi300x + 16x mi325x, mixed parts"


def test_parts_joined_by_and_keep_each_part_and_count() -> None:
    acc = normalise("MI300X (x8) and MI325X (x8) and MI355X (x8)")
    assert acc.name == "mi300x+mi325x+mi355x"
    assert acc.variant == "8x mi300x + 8x mi325x + 8x mi355x, mixed parts"
    (row,) = parse_summary(
        [
            {
                "ID": "6.1-0001",
                "Model": "llama2-70b-99",
                "Scenario": "Offline",
                "Accelerator": "MI300X (x8) and MI325X (x8) and MI355X (x8)",
                "Performance_Result": 1.0,
                "Performance_Units": "Tokens/s",
            }
        ],
        source="s",
        retrieved_at="d",
    )
    assert row.total_accelerators == 24


def test_price_table_plan_and_flags_use_the_same_keys() -> None:
    table = load_prices()
    assert set(prices()) <= set(table.gpus)
    for spelled in ("b200", "b200-sxm", "NVIDIA B200", "B200 SXM"):
        assert resolve_gpu(spelled, table.gpus) == "b200"
    assert resolve_gpu("NVIDIA H200", table.gpus) == "h200-sxm"
    with pytest.raises(ConfigError, match=r"Unknown GPU 'h300'\. Known: a100-sxm"):
        resolve_gpu("h300", table.gpus)


def test_latency_in_seconds_is_read_as_ms() -> None:
    row = {
        "ID": "6.0-0001",
        "version": "v6.0",
        "Model": "llama3.1-8b-edge",
        "Scenario": "SingleStream",
        "Performance_Result": 1.25,
        "Performance_Units": "Latency (s)",
    }
    (got,) = parse_summary([row], source="s", retrieved_at="d")
    assert (got.unit, got.value, got.flags) == ("ms", 1250.0, "")


def test_small_values_never_print_as_zero() -> None:
    assert format_number(0.031) == "0.031" and format_number(0.04) == "0.04"
    assert format_number(0.0) == "0.0" and format_number(12345.678) == "12,345.7"
    assert format_figure(0.30829876543) == "0.308"
    assert format_figure(23.92) == "23.92" and format_figure("x") == "x"


def test_99_and_99_9_rows_are_told_apart_in_compare(tmp_path: Path) -> None:
    rows = [
        {
            "ID": "v5.1-0001",
            "version": "v5.1",
            "Category": "closed",
            "Suite": "datacenter",
            "Model": model,
            "Scenario": "Server",
            "Accelerator": "NVIDIA H200-SXM-141GB",
            "a#": 8,
            "Nodes": 1,
            "Performance_Result": value,
            "Performance_Units": "Tokens/s",
        }
        for model, value in (("llama2-70b-99", 33000.0), ("llama2-70b-99.9", 29000.0))
    ]
    published = parse_summary(rows, source="s", retrieved_at="d")
    figure = run_figure(load_run(write_run(tmp_path / "r")))
    table = comparison_table(compare(figure, published))
    cells = [list(col.cells) for col in table.columns]
    ids = " ".join(cells[0])  # the suffix beside each result ID
    assert "(-99)" in ids and "(-99.9)" in ids


def test_report_of_a_gpu_run_prices_it_and_shows_its_own_part(tmp_path: Path) -> None:
    gpu = {"name": "NVIDIA H200", "count": 8}  # the host's, the model's own
    run = write_run(tmp_path / "r", gpu=gpu, sut_kind="torch_llm")
    out = tmp_path / "report.html"
    res = runner.invoke(
        app, ["report", str(run), "-o", str(out), "--store", str(tmp_path / "s.sqlite")]
    )
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert "8x h200-sxm" in html and "h200-sxm" in html
    # The cost table holds formatted figures, not Python float reprs.
    cost = html[html.find("Cost") :]
    assert not re.search(r"\d\.\d{6,}", cost[: cost.find("</table>")])
    flagged = tmp_path / "flagged.html"
    res = runner.invoke(
        app,
        [
            "report",
            str(write_run(tmp_path / "p")),
            "-o",
            str(flagged),
            "--gpu",
            "b200",
            "--gpus",
            "8",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    assert res.exit_code == 0, res.output
    table = (
        flagged.read_text().split("Compared with published", 1)[1].split("</table>")[0]
    )
    assert "8x b200" in table and "h200-sxm" not in table  # the run's own part


def test_compare_accelerator_b200_finds_the_b200_rows(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r")
    res = runner.invoke(
        app,
        [
            "compare",
            str(run),
            "--accelerator",
            "b200",
            "--json",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert '"accelerator": "b200"' in res.output
