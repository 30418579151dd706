"""The §5.5 regions, the point-list rules and the planner of ``infermeter endpoints``."""

from __future__ import annotations

import itertools
import json

import pytest

from infermeter.errors import ConfigError
from infermeter.runs.endpoints_plan import plan_curve
from infermeter.runs.endpoints_rules import (
    check_points,
    choose_points,
    compute_regions,
    violations,
)
from tests.cli_main import run_main

# Computed once with the official checker (endpoints-submission-cli 1.5.3) in a
# throwaway Python 3.12 venv, 2026-12-01:
#   python3.12 -m venv /tmp/h34-checker && /tmp/h34-checker/bin/pip install endpoints-submission-cli
#   /tmp/h34-checker/bin/python -c "from submission_checker.models.regions import compute_regions
#   for cmin in (1, 32):
#     for c in (33, 64, 100, 257, 1000, 4096, 65536):
#       r = compute_regions(c, cmin); print(cmin, c, [(b.start, b.end) for b in
#           (r.low_latency, r.low_concurrency, r.med_concurrency, r.high_concurrency, r.margin)])"
# (C_max 8 raises there: "Maximum Supported Concurrency must be greater than 32".)
CHECKER_REGIONS = {
    (1, 33): [(1, 1), (2, 4), (5, 11), (12, 33), (34, 37)],
    (1, 64): [(1, 1), (2, 5), (6, 17), (18, 64), (65, 71)],
    (1, 100): [(1, 1), (2, 6), (7, 22), (23, 100), (101, 111)],
    (1, 257): [(1, 1), (2, 7), (8, 41), (42, 257), (258, 283)],
    (1, 1000): [(1, 1), (2, 11), (12, 101), (102, 1000), (1001, 1100)],
    (1, 4096): [(1, 1), (2, 17), (18, 257), (258, 4096), (4097, 4506)],
    (1, 65536): [(1, 1), (2, 41), (42, 1626), (1627, 65536), (65537, 72090)],
    (32, 33): [(1, 32), (33, 33), (34, 33), (34, 33), (34, 37)],
    (32, 64): [(1, 32), (33, 35), (36, 42), (43, 64), (65, 71)],
    (32, 100): [(1, 32), (33, 36), (37, 49), (50, 100), (101, 111)],
    (32, 257): [(1, 32), (33, 38), (39, 69), (70, 257), (258, 283)],
    (32, 1000): [(1, 32), (33, 42), (43, 130), (131, 1000), (1001, 1100)],
    (32, 4096): [(1, 32), (33, 48), (49, 287), (288, 4096), (4097, 4506)],
    (32, 65536): [(1, 32), (33, 72), (73, 1657), (1658, 65536), (65537, 72090)],
}


@pytest.mark.parametrize(("c_min", "c_max"), sorted(CHECKER_REGIONS))
def test_regions_equal_the_checkers(c_min: int, c_max: int) -> None:
    regions = compute_regions(c_max, c_min)
    got = [(b.start, b.end) for _, b in regions.items()]
    assert got == CHECKER_REGIONS[(c_min, c_max)]


@pytest.mark.parametrize("c_min", [1, 32])
def test_c_max_8_is_refused_as_the_checker_refuses_it(c_min: int) -> None:
    with pytest.raises(ConfigError, match="above 32"):
        compute_regions(8, c_min)


def test_six_points_are_refused_naming_the_rule() -> None:
    with pytest.raises(ConfigError, match=r"point-count \(§5\.3\): 6 points"):
        check_points([1, 4, 8, 32, 64, 1000], 1000)


def test_a_list_missing_the_high_region_is_refused_naming_it() -> None:
    found = violations([1, 2, 8, 32, 64, 90, 101], 1000)
    assert [v.rule for v in found] == ["high-concurrency-coverage"]
    assert "102-1000" in found[0].text


def test_other_rules_each_name_themselves() -> None:
    rules = {v.rule for v in violations([40, 50, 60, 70, 80, 90, 2000], 1000)}
    assert {"ultra-low-concurrency-coverage", "concurrency-in-range"} <= rules
    assert [v.rule for v in violations([*range(1, 34), 1000], 1000)] == ["point-cap"]
    # a margin point covers no region: High still has none
    assert "high-concurrency-coverage" in {
        v.rule for v in violations([1, 2, 8, 32, 64, 90, 1050], 1000)
    }


@pytest.mark.parametrize("c_max", [33, 64, 100, 257, 1000, 4096, 65536])
@pytest.mark.parametrize("count", [7, 12, 32])
def test_chosen_points_are_legal_and_span_the_curve(c_max: int, count: int) -> None:
    points = choose_points(c_max, 1, count)
    assert len(points) == count == len(set(points))
    assert points[0] == 1 and points[-1] == c_max
    assert violations(points, c_max) == []


def test_an_empty_region_asks_for_a_lower_c_min() -> None:
    with pytest.raises(ConfigError, match="lower --c-min"):
        choose_points(33, 32)


def test_plan_costs_each_point_by_its_region() -> None:
    plan = plan_curve(1000, warmup_s=10)
    windows = {p.concurrency: p.min_window_s for p in plan.points}
    assert all(w == (600 if c <= 32 else 1200) for c, w in windows.items())
    assert plan.total_s == sum(windows.values()) + 10 * len(windows)
    assert plan.total_is_lower_bound


def test_plan_with_a_rate_spans_whole_dataset_passes() -> None:
    plan = plan_curve(1000, dataset_size=1000, qps={1000: 20.0, 1: 0.5})
    top = plan.points[-1]
    assert top.min_passes == 24  # 1200 s x 20 q/s = 24,000 queries = 24 passes
    assert top.window_s == pytest.approx(1200.0)
    assert plan.points[0].min_passes == 1  # 300 queries in 600 s: one whole pass


def test_cli_plan_prints_json_and_refuses_with_exit_2() -> None:
    ok = run_main("endpoints", "plan", "--c-max", "1000", "--json")
    assert ok.code == 0, ok.output
    doc = json.loads(ok.stdout)
    assert doc["regions"]["high_concurrency"] == [102, 1000]
    assert len(doc["points"]) == 7
    bad = run_main(
        "endpoints", "plan", "--c-max", "1000", "--concurrency", "1,2,3,4,5,6"
    )
    assert bad.code == 2
    assert "point-count" in bad.stderr and "Traceback" not in bad.output


def test_predicted_points_trade_user_speed_for_throughput() -> None:
    from infermeter.runs.endpoints_predict import predict_curve

    levels = choose_points(2048, 1)
    predicted, wl = predict_curve(levels, "llama2-70b", "h200", 8)
    rows = [predicted[c] for c in levels]
    assert all(a.system_tps < b.system_tps for a, b in itertools.pairwise(rows))
    assert all(a.tps_per_user >= b.tps_per_user for a, b in itertools.pairwise(rows))
    # a closed loop: throughput is the users over a request's time, times its tokens
    one = rows[0]
    request_s = one.ttft_ms / 1e3 + (wl.osl_mean - 1) / one.tps_per_user
    assert one.system_tps == pytest.approx(wl.osl_mean / request_s)
    done = run_main(
        "endpoints", "plan", "--c-max", "2048", "--model", "llama2-70b",
        "--accelerator", "h200", "--json",
    )  # fmt: skip
    assert done.code == 0, done.output
    doc = json.loads(done.stdout)
    assert doc["predicted"]["label"].startswith("derived")
    assert not doc["total_is_lower_bound"]
    assert run_main("endpoints", "plan", "--c-max", "64", "--model", "x").code == 2
