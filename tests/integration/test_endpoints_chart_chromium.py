"""The endpoints curve page in headless Chromium: two curves of 9 points render, with
their region bands, and nothing injected through a label runs.

Skips when Debian's chromium is absent (apt-get install chromium).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.endpoints_fixtures import store_point
from tests.integration.test_report_chromium import CHROMIUM, _dump_dom

from infermeter.report.endpoints_chart import curve_figure, write_page
from infermeter.runs.endpoints_curve import (
    chart_data,
    load_curve,
    region_table,
    table_text,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"),
]
LEVELS = [1, 3, 4, 9, 18, 28, 84, 104, 256]  # endpoints plan --c-max 256 --points 9
PAYLOAD = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"


def _curve(folder: Path, scale: float) -> Path:
    for i, c in enumerate(LEVELS):
        store_point(folder, c, i, tokens=int(100 * c * scale), tpot_p90_ms=c)
    return folder


def test_two_curves_of_nine_points_render(tmp_path: Path) -> None:
    curves = [
        load_curve(_curve(tmp_path / "a", 1.0), PAYLOAD),
        load_curve(_curve(tmp_path / "b", 1.3), "b"),
    ]
    plain, bands = chart_data(curves)
    text = table_text(curves, region_table(curves))
    page = write_page(
        tmp_path / "c.html", curve_figure(plain, bands), text, "two curves"
    )
    dom, log = _dump_dom(page, tmp_path)  # the report test's Chromium call
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []
    assert 'class="main-svg"' in dom  # plotly drew the chart
    assert dom.count('class="point ') == 2 * len(LEVELS)  # every marker of both curves
    assert dom.count('class="textpoint"') == 2 * len(LEVELS)  # their c<N> labels
    assert dom.count('class="legendtext') == 2  # one step function per curve
    for region in ("Ultra Low", "Low", "Medium", "High"):
        assert f">{region}<" in dom
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]


def test_the_report_draws_two_curves_of_nine_points(tmp_path: Path) -> None:
    from infermeter.report.html import build_report, write_report
    from infermeter.runs.endpoints_curve import report_view

    curves = [
        load_curve(_curve(tmp_path / "a", 1.0), "a"),
        load_curve(_curve(tmp_path / "b", 1.3), "b"),
    ]
    page = write_report(
        build_report([], curves=report_view(curves)), tmp_path / "r.html"
    )
    dom, log = _dump_dom(page, tmp_path)
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []
    assert dom.count('class="point ') == 2 * len(LEVELS)
    assert dom.count('class="textpoint"') == 2 * len(LEVELS)
    for region in ("Ultra Low", "Low", "Medium", "High"):
        assert f">{region}<" in dom  # band names on the chart, rows of the table
    assert dom.count("(+30.0%)") == 8  # height and area of b against a, per region
