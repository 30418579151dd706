"""MLPerf Endpoints curves in ``infermeter report`` and ``compare``: one chart that
overlays every fixed-concurrency sweep, and the per-region numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_main import run_main
from tests.endpoints_fixtures import LEVELS, store_point

pytestmark = pytest.mark.integration


def _curve(folder: Path, scale: float = 1.0, mode: str = "concurrency") -> Path:
    # concurrency c: 50 c scale tok/s, TPOT p90 c ms (1000 / c tok/s/user)
    for i, c in enumerate(LEVELS):
        store_point(folder, c, i, mode, tokens=int(100 * c * scale), tpot_p90_ms=c)
    return folder


def _charts(page: Path) -> list[dict[str, object]]:
    html = page.read_text(encoding="utf-8")
    data = html.split('id="charts-data">', 1)[1].split("</script>", 1)[0]
    return list(json.loads(data))


def test_report_overlays_the_curves_with_regions_and_numbers(tmp_path: Path) -> None:
    a, b = _curve(tmp_path / "h100"), _curve(tmp_path / "h200", 1.3)
    page = tmp_path / "r.html"
    done = run_main("report", str(a), str(b), "-o", str(page), "--json")
    assert done.code == 0, done.output
    said = json.loads(done.stdout)
    assert (said["curves"], said["sweeps"], said["runs"]) == (["h100", "h200"], [], [])
    [chart] = [c for c in _charts(page) if c["id"] == "endpoints-curve"]
    figure = chart["figure"]
    assert isinstance(figure, dict)
    traces = figure["data"]
    assert [t["mode"] for t in traces] == ["lines", "markers+text"] * 2
    assert [len(t["x"]) for t in traces[1::2]] == [len(LEVELS)] * 2
    assert len(figure["layout"]["shapes"]) == 4  # the four regions shaded
    assert traces[1]["customdata"][0][0] == pytest.approx(3.0)  # TTFT p90 (ms)
    html = page.read_text(encoding="utf-8")
    assert "MLPerf Endpoints curves: h100, h200" in html
    table = html.split('class="curve-regions">', 1)[1].split("</table>", 1)[0]
    for region in ("Ultra Low", "Low", "Medium", "High"):
        assert f"<td>{region}</td>" in table
    assert table.count("(+30.0%)") == 8  # height and area, 4 regions, b against a
    assert "Pareto" not in html  # a curve is not drawn twice


def test_compare_of_curves_prints_each_region(tmp_path: Path) -> None:
    a, b = _curve(tmp_path / "a"), _curve(tmp_path / "b", 0.5)
    done = run_main("compare", str(a), str(b), "--json")
    assert done.code == 0, done.output
    rows = json.loads(done.stdout)
    assert [r["region"] for r in rows] == ["Ultra Low", "Low", "Medium", "High"]
    assert all(r["height_diff_1"] == pytest.approx(-0.5) for r in rows)
    page = tmp_path / "c.html"
    done = run_main("compare", str(a), str(b), "--out", str(page))
    assert done.code == 0, done.output
    assert "High" in done.stdout and "(-50.0%)" in done.stdout and page.is_file()


def test_compare_refuses_what_is_not_a_curve(tmp_path: Path) -> None:
    a, rate = _curve(tmp_path / "a"), _curve(tmp_path / "rate", mode="rate")
    bad = run_main("compare", str(a), str(rate))
    assert bad.code == 2 and "rate is not a curve" in bad.stderr
    assert "Traceback" not in bad.output
    bad = run_main("compare", str(a), "--out", str(tmp_path / "x.html"))
    assert bad.code == 2 and "--out draws curves" in bad.stderr
    assert not (tmp_path / "x.html").exists()
