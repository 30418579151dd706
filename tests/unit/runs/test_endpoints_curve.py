"""The published step function, region heights and areas, and the curve chart page."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from infermeter.report.endpoints_chart import curve_figure, write_page
from infermeter.runs.endpoints_curve import (
    chart_data,
    load_curve,
    region_table,
    table_text,
)
from tests.cli_main import run_main
from tests.endpoints_fixtures import LEVELS, store_point


def _curve(folder: Path, scale: float = 1.0) -> Path:
    # concurrency c: 100 c tokens over 2 s (50 c tok/s), TPOT p90 c ms (1000 / c tok/s/user)
    for i, c in enumerate(LEVELS):
        store_point(folder, c, i, tokens=int(100 * c * scale), tpot_p90_ms=c)
    return folder


def test_step_function_is_the_best_throughput_at_each_user_speed(
    tmp_path: Path,
) -> None:
    curve = load_curve(_curve(tmp_path / "a"))
    assert [p.tps_per_user for p in curve.points][:3] == [1000.0, 500.0, 250.0]
    assert curve.step(1000.0) == 50.0  # only c=1 serves 1000 tok/s/user
    assert curve.step(300.0) == 100.0  # c=2 (500 tok/s/user) is the best that fast
    assert curve.step(1.0) == 2000.0  # c=40
    assert curve.area(250.0, 500.0) == pytest.approx(100.0 * 250.0)
    xs, ys = curve.staircase()
    assert xs[-1] == 1000.0 and ys[-1] == 50.0 and ys[0] == 2000.0


def test_region_table_compares_heights_and_areas_with_the_first(tmp_path: Path) -> None:
    a = load_curve(_curve(tmp_path / "a"), "a")
    b = load_curve(_curve(tmp_path / "b", scale=1.5), "b")
    rows = region_table([a, b])
    assert [r["region"] for r in rows] == ["Ultra Low", "Low", "Medium", "High"]
    high = rows[-1]
    assert high["height_0"] == 2000.0 and high["height_1"] == 3000.0
    assert high["height_diff_1"] == pytest.approx(0.5)
    assert high["area_diff_1"] == pytest.approx(0.5)  # every step 1.5x as high
    # the spans tile the axis from 0 to the fastest point: areas add up to the curve's
    spans = [r["tps_per_user_span"] for r in rows]
    assert spans[-1][0] == 0.0 and spans[0][1] == 1000.0
    assert all(lo == prev_lo for (prev_lo, _), (_, lo) in itertools.pairwise(spans))
    assert sum(r["area_0"] for r in rows) == pytest.approx(a.area(0.0, 1000.0))
    text = table_text([a, b], rows)
    assert text[0][:3] == ["region", "tok/s/user span", "height a"]
    assert "(+50.0%)" in text[-1][4]


def test_chart_page_overlays_curves_and_shades_regions(tmp_path: Path) -> None:
    curves = [
        load_curve(_curve(tmp_path / "a"), "a </script>"),
        load_curve(_curve(tmp_path / "b", 2.0)),
    ]
    plain, bands = chart_data(curves)
    figure = curve_figure(plain, bands)
    assert len(figure["data"]) == 4  # a step line and markers per curve
    assert [b["region"] for b in bands] == ["Ultra Low", "Low", "Medium", "High"]
    assert len(figure["layout"]["shapes"]) == 4
    assert figure["data"][1]["customdata"][0][0] == pytest.approx(3.0)  # TTFT p90 ms
    page = write_page(
        tmp_path / "c.html", figure, table_text(curves, region_table(curves)), "t"
    )
    text = page.read_text()
    assert "Plotly.newPlot" in text and "a </script>" not in text


def test_curve_command_prints_the_table_and_writes_the_page(tmp_path: Path) -> None:
    done = run_main(
        "endpoints",
        "curve",
        str(_curve(tmp_path / "a")),
        "--out",
        str(tmp_path / "c.html"),
    )
    assert done.code == 0, done.output
    assert "High" in done.stdout and (tmp_path / "c.html").is_file()
    bad = run_main(
        "endpoints", "curve", str(tmp_path / "a"), "--label", "x", "--label", "y"
    )
    assert bad.code == 2 and "one --label per folder" in bad.stderr
