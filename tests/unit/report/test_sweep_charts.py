"""The sweep report's section: its points by load, the limits drawn, a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infermeter.report.sweep_charts import sweep_section


def _summary(
    folder: Path,
    concurrency: int,
    tps: float,
    ttft_ms: float | None,
    tpot_ms: float | None,
) -> None:
    folder = folder / "performance"
    folder.mkdir(parents=True)
    data: dict[str, Any] = {
        "tps": tps,
        "n_samples_issued": 10,
        "n_samples_completed": 10,
        "n_samples_failed": 0,
        "run_config": {"load": {"mode": "concurrency", "concurrency": concurrency}},
        "latency": {"percentiles": {"90": 50e6}},
        "output_sequence_lengths": {"avg": 10.0},
    }
    for key, ms in (("ttft", ttft_ms), ("tpot", tpot_ms)):
        data[key] = {"percentiles": {"90": ms * 1e6}} if ms else {"total": 0}
    (folder / "result_summary.json").write_text(json.dumps(data))


def _sweep(tmp_path: Path, levels: list[int], *, listed: bool) -> Path:
    """A sweep folder as ``infermeter sweep`` writes it (``listed``: with its
    sweep.json, whose limits are TTFT 100 ms and TPOT 5 ms)."""
    sweep = tmp_path / "sweep"
    rows = []
    for i, c in enumerate(levels):
        name = f"{i:02d}_c{c}"
        _summary(sweep / name, c, 100.0 * c, 10.0 * c, 1.0 + c / 10)
        rows.append({"point": name, "issued": 10, "completed": 10, "failed": 0})
    if listed:
        rows[-1].update(completed=9, unanswered=1, pareto=False, meets_limits=False)
        for row in rows[:-1]:
            row.update(unanswered=0, pareto=True, meets_limits=True)
        limits = {"ttft_ms": 100.0, "tpot_ms": 5.0, "percentile": 90.0}
        (sweep / "sweep.json").write_text(
            json.dumps({"limits": limits, "points": rows})
        )
    return sweep


def _titled(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        c["figure"]["layout"]["title"]["text"]: c["figure"] for c in section["charts"]
    }


def test_the_limits_are_drawn_on_their_series_axis_and_the_table_has_each_point(
    tmp_path: Path,
) -> None:
    section = sweep_section(_sweep(tmp_path, [1, 4, 16, 64], listed=True), 0)
    charts = _titled(section)
    assert list(charts) == [
        "Pareto front: sweep", "TTFT and TPOT p90 by load", "Tokens/s by load",
    ]  # fmt: skip
    latency = charts["TTFT and TPOT p90 by load"]
    ttft, tpot = latency["data"]
    assert (ttft["yaxis"], tpot["yaxis"]) == ("y", "y2")
    assert ttft["x"] == [1, 4, 16, 64] and ttft["y"] == [10.0, 40.0, 160.0, 640.0]
    lines = {(s["yref"], s["y0"]) for s in latency["layout"]["shapes"]}
    assert lines == {("y", 100.0), ("y2", 5.0)}
    texts = [a["text"] for a in latency["layout"]["annotations"]]
    assert texts == ["TTFT limit 100 ms", "TPOT limit 5 ms"]
    assert latency["layout"]["xaxis"]["type"] == "log"  # 1..64: spread evenly
    header, *rows = section["table"]
    assert header[-4:] == ["failed", "unanswered", "Pareto", "meets limits"]
    # The last point left a request unanswered: sweep.json's flags, not a
    # front computed again from its (best) figures.
    assert rows[-1][0] == "03_c64" and rows[-1][-4:] == ["0", "1", "no", "no"]
    assert [r[-2] for r in rows[:-1]] == ["yes"] * 3
    pareto = charts["Tokens/s by load"]["data"][1]
    assert pareto["name"] == "Pareto point" and pareto["x"] == [1, 4, 16]


def test_without_sweep_json_the_front_is_computed_and_no_limit_is_drawn(
    tmp_path: Path,
) -> None:
    section = sweep_section(_sweep(tmp_path, [1, 2, 4], listed=False), 0)
    latency = _titled(section)["TTFT and TPOT p90 by load"]
    assert "shapes" not in latency["layout"]
    assert "type" not in latency["layout"]["xaxis"]  # 1..4: a linear axis
    header, *rows = section["table"]
    assert "meets limits" not in header
    # Counts from each point's own summary; every point on the front here.
    assert [r[6:] for r in rows] == [["10", "0", "0", "yes"]] * 3


def test_a_sweep_not_streamed_has_no_latency_chart_and_no_pareto_chart_if_drawn_elsewhere(
    tmp_path: Path,
) -> None:
    sweep = tmp_path / "sweep"
    for i, c in enumerate((1, 4)):
        _summary(sweep / f"{i:02d}_c{c}", c, 100.0 * c, None, None)
    section = sweep_section(sweep, 3, pareto=False)
    assert list(_titled(section)) == ["Tokens/s by load"]  # no empty chart
    assert section["charts"][0]["id"].startswith("sweep-3-")
    assert [r[4:6] for r in section["table"][1:]] == [["n/a", "n/a"]] * 2
