"""One "% of published" figure on every surface: the console's line after a sim
run, ``compare`` and ``report`` quote the same number, from ``best_match``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from infermeter.results.compare import best_match, run_figure, select_published
from infermeter.results.headline import headline_results
from infermeter.results.runfolder import load_run
from infermeter.runs.sim_endpoint import sim_comparison
from tests.cli_main import run_main
from tests.results_fixtures import write_run

SIM = {"accelerator": "h100-sxm", "count": "8"}


def _best_in(text: str) -> float:
    found = re.findall(r"Best match: ([0-9.]+) % of published", text)
    assert len(set(found)) == 1, found
    return float(found[0])


def test_console_compare_and_report_quote_one_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERMETER_HOME", str(tmp_path / "home"))
    folder = write_run(tmp_path / "r", qps=10.0, sut_kind="sim", sut_params=SIM)
    document = json.loads((folder / "run.json").read_text())
    console = sim_comparison(folder, document)
    assert console.best is not None
    done = run_main("compare", str(folder), "--json")
    assert done.code == 0, done.output
    assert json.loads(done.stdout)["best_match_pct"] == console.best
    html = tmp_path / "report.html"
    done = run_main("report", str(folder), "-o", str(html))
    assert done.code == 0, done.output
    assert _best_in(html.read_text()) == round(console.best, 1)
    # Like for like: the 8x H100 system's own row, whole system to whole system.
    figure = run_figure(load_run(folder))
    rows = [
        r
        for r in headline_results()
        if r.base_benchmark == "llama2-70b"
        and r.scenario == "Server"
        and r.accelerator == "h100-sxm"
        and r.total_accelerators == 8
    ]
    assert rows
    expected = max(figure.value / r.value * 100 for r in rows)
    assert console.best == pytest.approx(expected)
    chosen, _ = select_published(headline_results(), figure, limit=0)
    assert best_match(figure, chosen) == console.best


def test_a_fake_run_gets_no_comparison_in_its_report_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERMETER_HOME", str(tmp_path / "home"))
    folder = write_run(tmp_path / "r", gpu={"name": "NVIDIA H200", "count": 8})
    html = tmp_path / "report.html"
    assert run_main("report", str(folder), "-o", str(html)).code == 0
    assert "% of published" not in html.read_text()
    assert run_main("report", str(folder), "-o", str(html), "--compare").code == 0
    text = html.read_text()
    assert "% of published" in text and "not known (--gpu, --gpus)" in text
    assert "Best match" not in text and "?x unknown" not in text
    assert "NVIDIA NVIDIA" not in text


def test_the_comparison_table_fits_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERMETER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    folder = write_run(tmp_path / "r", sut_kind="sim", sut_params=SIM)
    done = run_main("compare", str(folder))
    assert done.code == 0, done.output
    table = [line for line in done.stdout.splitlines() if line[:1] in "┏┃│┡└"]
    assert table and max(len(line) for line in table) <= 80
    assert "…" not in done.stdout and "(-99)" in done.stdout
