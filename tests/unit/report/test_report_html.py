"""The HTML report: self-contained, charts present, every run string escaped."""

from __future__ import annotations

import json

import pytest
from tests.results_fixtures import write_run
from typer.testing import CliRunner

from infermeter.cli.main import app
from infermeter.errors import StoreError
from infermeter.perfmodel.published import round_file
from infermeter.report.html import build_report, script_json
from infermeter.report.sweep import is_sweep, sweep_points
from infermeter.results.runfolder import load_run

PAYLOAD = '<script>document.body.setAttribute("data-pwned","1")</script>'


def _charts(html: str) -> list[dict]:
    start = html.index('<script type="application/json" id="charts-data">')
    body = html[start:].split(">", 1)[1].split("</script>", 1)[0]
    return json.loads(body)


def test_report_embeds_plotly_and_one_chart_per_view(tmp_path):
    run = load_run(write_run(tmp_path / "r", failures=2))
    html = build_report([run], generated_at="2026-11-26T00:00:00+00:00")
    assert "https://cdn" not in html.split("<script>", 1)[0]  # no remote assets
    assert len(html) > 3_000_000  # plotly.js inline: opens offline
    charts = _charts(html)
    titles = [c["figure"]["layout"]["title"]["text"] for c in charts]
    assert titles == [
        "Latency CDF",
        "Latency histogram",
        "TTFT",
        "TPOT",
        "Output length",
        "Throughput (tokens/s)",
        "Requests in flight",
        "Issue lateness",
    ]
    cdf = charts[0]["figure"]["data"][0]
    assert cdf["y"][-1] == 1.0 and len(cdf["x"]) <= 1000
    hist = charts[1]["figure"]["data"][0]
    assert sum(hist["y"]) == 398  # successful samples only
    assert "HTTP 500: upstream error" in html and "unverified" in html


def test_strings_from_the_run_are_escaped(tmp_path):
    folder = write_run(
        tmp_path / "r",
        sut_name=PAYLOAD,
        responses=[PAYLOAD, "</script><script>alert(1)</script>"],
        reasons=(PAYLOAD,),
        failures=1,
        verdict_reasons=(PAYLOAD,),
    )
    html = build_report([load_run(folder)])
    assert PAYLOAD not in html
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;document.body.setAttribute" in html
    assert html.count("<script") == 3  # plotly.js, chart data, the plot loop


def test_script_json_cannot_close_a_script():
    text = script_json({"a": "</script><b>&"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><b>&"}


def test_non_token_run_has_no_ttft_chart(tmp_path):
    run = load_run(write_run(tmp_path / "r", tokens=False, benchmark="resnet"))
    titles = [
        c["figure"]["layout"]["title"]["text"] for c in _charts(build_report([run]))
    ]
    assert "TTFT" not in titles and "Throughput (samples/s)" in titles


def test_two_runs_get_an_overlay(tmp_path):
    runs = [load_run(write_run(tmp_path / n, seed=i)) for i, n in enumerate("ab")]
    charts = _charts(build_report(runs))
    overlay = next(c for c in charts if c["id"] == "overlay")
    assert len(overlay["figure"]["data"]) == 2


def _point(folder, tps, tpot_ms, endpoints):
    folder.mkdir(parents=True)
    if endpoints:
        data = {"tps": tps, "tpot": {"percentiles": {"90": tpot_ms * 1e6}}}
        (folder / "result_summary.json").write_text(json.dumps(data))
    else:
        data = {
            "metrics": {"tokens_per_second": tps, "tpot_ns": {"p90": tpot_ms * 1e6}}
        }
        (folder / "run.json").write_text(json.dumps(data))


def test_sweep_points_and_pareto(tmp_path):
    sweep = tmp_path / "sweep"
    _point(sweep / "c1", 100.0, 10.0, endpoints=True)
    _point(sweep / "c8", 600.0, 20.0, endpoints=False)
    assert is_sweep(sweep)
    points = sweep_points(sweep)
    assert sorted(p["tps_per_user"] for p in points) == [50.0, 100.0]
    html = build_report([], sweeps=[sweep])
    pareto = _charts(html)[0]["figure"]
    assert pareto["data"][0]["x"] == [50.0, 100.0]
    assert pareto["data"][0]["y"] == [600.0, 100.0]


def test_a_non_streamed_sweep_is_reported_with_its_load_on_each_point(tmp_path):
    # What ``sweep --sut-opt stream=false`` writes: no TPOT, a latency and lengths.
    sweep = tmp_path / "sweep"
    for name, concurrency, latency_ms in (("00_c1", 1, 10.0), ("01_c4", 4, 20.0)):
        folder = sweep / name / "performance"
        folder.mkdir(parents=True)
        data = {
            "tps": 400.0 * concurrency / latency_ms,
            "ttft": {"total": 0},
            "tpot": {"total": 0},
            "latency": {"percentiles": {"90": latency_ms * 1e6}},
            "output_sequence_lengths": {"avg": 4.0},
            "run_config": {"load": {"mode": "concurrency", "concurrency": concurrency}},
        }
        (folder / "result_summary.json").write_text(json.dumps(data))
    points = sweep_points(sweep)
    # 4 tokens in 10 ms and 20 ms: 400 and 200 tokens/s for one user.
    assert [p["tps_per_user"] for p in points] == [400.0, 200.0]
    pareto = _charts(build_report([], sweeps=[sweep]))[0]["figure"]
    assert pareto["data"][0]["text"] == ["concurrency 4", "concurrency 1"]


def test_the_pareto_chart_marks_the_front_and_labels_every_point(tmp_path):
    sweep = tmp_path / "sweep"
    _point(sweep / "c1", 100.0, 10.0, endpoints=True)
    _point(sweep / "c2", 80.0, 20.0, endpoints=True)  # slower for each and in total
    _point(sweep / "c8", 600.0, 20.0, endpoints=False)
    front, every = _charts(build_report([], sweeps=[sweep]))[0]["figure"]["data"]
    assert (front["name"], every["name"]) == ("Pareto front", "every point")
    assert front["y"] == [600.0, 100.0] and sorted(every["y"]) == [80.0, 100.0, 600.0]


def test_empty_sweep_is_one_line(tmp_path):
    (tmp_path / "s" / "p").mkdir(parents=True)
    (tmp_path / "s" / "p" / "result_summary.json").write_text("{}")
    with pytest.raises(StoreError, match="no points"):
        sweep_points(tmp_path / "s")


def test_cli_report_with_comparison_and_cost(tmp_path):
    folder = write_run(tmp_path / "r", scenario="Offline")
    out = tmp_path / "out.html"
    result = CliRunner().invoke(
        app,
        [
            "report",
            str(folder),
            "-o",
            str(out),
            "--gpu",
            "h100-sxm",
            "--gpus",
            "8",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["report"] == str(out)
    html = out.read_text()
    # --gpu h100-sxm: the published rows are the run's own part.
    assert "result ID v4.1-0043" in html and "per_million_tokens" in html
    assert "result ID v4.1-0046" not in html
    assert "not verified by MLCommons" in html
    # The performance model's figure for the run's system names its kind (and,
    # where the shared rounds are on this machine, its anchors by result ID).
    assert "performance model (anchored, derived)" in html or (
        "performance model (modelled, derived)" in html
    )
    if round_file("v6.1").exists():
        assert "anchored on" in html and "(same system, v" in html


def test_the_headline_puts_the_figure_and_p99s_beside_their_bounds_first(tmp_path):
    folder = write_run(tmp_path / "r", scenario="Server", sut_kind="openai")
    doc = json.loads((folder / "run.json").read_text())
    doc["sut"]["name"] = "openai"  # the kind and the name alike: said once
    doc["settings"]["requested"] = {"ttft_latency": 2_000_000_000, "tpot_latency": 1}
    (folder / "run.json").write_text(json.dumps(doc))
    html = build_report([load_run(folder)])
    head = html[html.index('<div class="headline">') :]
    head = head[: head.index("</div></div>")]
    assert head.index("tokens/s") < head.index("TTFT p99") < head.index("TPOT p99")
    assert '"figure ok"><span class="value">' in head  # TTFT within 2 s
    assert '"figure over"><span class="value">' in head  # TPOT over 1 ns
    assert "bound 2,000 ms" in head
    assert html.index('class="headline"') < html.index("<h3>Metrics</h3>")
    assert "SUT openai ·" in html and "openai openai" not in html
    ttft = next(
        c["figure"]
        for c in _charts(html)
        if c["figure"]["layout"]["title"]["text"] == "TTFT"
    )
    assert [s["x0"] for s in ttft["layout"]["shapes"]] == [2000.0]


def test_no_chart_for_a_series_that_never_moved_and_no_python_reprs(tmp_path):
    from infermeter.report import server_charts

    def series(key: str, values: list[float | None]) -> dict:
        t = [float(i) for i in range(len(values))]
        return {"key": key, "title": key, "unit": "n", "source": 0, "t_s": t,
                "values": values}  # fmt: skip

    data = {
        "sources": [{"url": "http://x/metrics"}],
        "series": [series("running", [0, 3, 2]), series("preemptions", [0, 0, None])],
    }
    titles = [f["layout"]["title"]["text"] for f in server_charts.figures(data)]
    assert titles == ["running"]  # preemptions stayed 0: no empty chart
    folder = write_run(tmp_path / "r", gpu=None)
    html = build_report([load_run(folder)])
    env = html[html.index("<h3>Environment</h3>") :]
    env = env[: env.index("</table>")]
    assert "None" not in env and "{'" not in env and "[]" not in env
    assert "<th>gpu</th><td>-</td>" in env and "numpy " in env
    charts = [c["figure"]["layout"]["title"]["text"] for c in _charts(html)]
    assert "Output length" in charts


PREDICTION = {
    "kind": "anchored",
    "predicted_tokens_s": 25_000.0,
    "modelled_tokens_s": 24_000.0,
    "pct_of_predicted": 40.0,
    "fit": "v4.1",
    "stack": "trt-llm",
    "precision": "fp8",
    "anchor_count": 7,
    "anchors": [
        {"result_id": "v4.1-0043", "round": "v4.1", "nearness": "same system"},
        {"result_id": "v4.1-0046", "round": "v4.1", "nearness": "same part family"},
    ],
}


def _with_comparison(tmp_path, prediction):
    run = load_run(write_run(tmp_path / "r", scenario="Offline"))
    comparison = {
        "run": {
            "label": "unverified",
            "run_id": run.run_id,
            "benchmark": "llama2-70b",
            "accelerator": "h100-sxm",
            "accelerators": 8,
            "value": 10_000.0,
            "unit": "tokens/s",
            "per_accelerator": 1_250.0,
        },
        "rows": [],
        "footnotes": [],
        "notes": [],
    }
    extras = {run.run_id: {"comparison": comparison, "prediction": prediction}}
    return build_report([run], extras=extras)


def test_the_report_names_a_predictions_kind_and_anchors(tmp_path):
    html = _with_comparison(tmp_path, PREDICTION)
    assert "performance model (anchored, derived)" in html
    assert "anchored on 7 published row(s)" in html
    assert "result ID v4.1-0043 (same system, v4.1)" in html
    assert "result ID v4.1-0046 (same part family, v4.1)" in html
    assert "not a measurement or an MLPerf result" in html


def test_the_report_says_when_a_prediction_is_modelled(tmp_path):
    modelled = {**PREDICTION, "kind": "modelled", "anchor_count": 0, "anchors": []}
    html = _with_comparison(tmp_path, modelled)
    assert "performance model (modelled, derived)" in html
    assert "modelled: no published row of this benchmark and scenario" in html
    assert "result ID v4.1-0043" not in html


def test_no_prediction_where_the_model_has_nothing_to_say(tmp_path):
    from infermeter.report.prediction import prediction_for

    run = {"benchmark": "llama2-70b", "scenario": "Offline", "value": 1.0}
    assert (
        prediction_for(
            {**run, "unit": "samples/s", "accelerator": "h100-sxm", "accelerators": 8}
        )
        is None
    )
    assert (
        prediction_for(
            {**run, "unit": "tokens/s", "accelerator": None, "accelerators": None}
        )
        is None
    )
    assert (
        prediction_for(
            {
                **run,
                "unit": "tokens/s",
                "accelerator": "no-such-part",
                "accelerators": 8,
            }
        )
        is None
    )
    assert "performance model (" not in _with_comparison(tmp_path, None)
