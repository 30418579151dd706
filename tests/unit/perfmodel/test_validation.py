"""The model against published MLPerf rounds it did not see (issue 12's checks).

Reads ../shared/data/mlperf in place and skips without it. The bounds here are
what the model measures today (docs/perfmodel.md has the tables); where they are
looser than the issue's targets the docs say so: they guard against regressions,
they do not claim the targets.
"""

from __future__ import annotations

import pytest

from infermeter.errors import ConfigError
from infermeter.perfmodel.calibrate import (
    Validation,
    leave_one_system_out,
    load_results,
    predict_rows,
    shipped,
)
from infermeter.perfmodel.plancheck import plan_published_row
from infermeter.perfmodel.planner import Option
from infermeter.perfmodel.published import round_file

pytestmark = pytest.mark.skipif(
    not round_file("v5.1").exists() or not round_file("v4.1").exists(),
    reason="../shared MLPerf summary files are absent",
)


@pytest.fixture(scope="module")
def round_out() -> Validation:
    """Fit v4.1 only (the shipped fit), predict every v5.1 LLM row."""
    return predict_rows(load_results(["v5.1"]), shipped()["v4.1"])


@pytest.fixture(scope="module")
def system_out() -> Validation:
    return leave_one_system_out(load_results(["v4.1", "v5.1"]))


def _subset(v: Validation, **match: str) -> Validation:
    keep = tuple(
        p
        for p in v.predictions
        if all(getattr(p.row, k) == value for k, value in match.items())
    )
    return Validation(v.name, v.fit_label, keep)


def test_round_out_covers_at_least_95_percent_of_v51_llm_rows(
    round_out: Validation,
) -> None:
    # Closed datacenter LLM rows, Offline/Server/Interactive, -99/-99.9 merged.
    assert round_out.total >= 264
    assert round_out.coverage >= 0.95
    for skip in round_out.skipped:
        assert skip.reason  # every row it cannot model says why
    rounds = {p.row.round for p in round_out.predictions}
    assert rounds == {"v5.1"} and shipped()["v4.1"].rounds == ("v4.1",)


def test_round_out_error_stays_at_todays_level(round_out: Validation) -> None:
    # Issue target: median <= 12 %, p90 <= 30 %. Measured (docs/perfmodel.md):
    # median 11.3 %, p90 29.0 % since a TPOT bound sets the batch continuously
    # (10.6 % / 30.3 % on the batch ladder's steps; 11.4 % / 45.9 % before
    # Interactive lost its fitted level, 65.4 % p90 before the integer-weight
    # matmul rates): DeepSeek-R1 Server (physics 1.9x high) has no v4.1 rows to
    # learn from.
    overall = round_out.overall()
    assert overall.median <= 0.12 and overall.p90 <= 0.30
    inter = _subset(round_out, scenario="Interactive").overall()
    assert inter.median < 0.20  # physics alone: 18.4 % (36.8 % with a level)
    llama2 = _subset(round_out, benchmark="llama2-70b", scenario="Offline").overall()
    assert llama2.median < 0.15


def test_round_out_predicts_deepseek_offline_from_physics(
    round_out: Validation,
) -> None:
    # A fit that never saw DeepSeek-R1 (or any reasoning model): its Offline rows
    # within 12.5 % (median; 4.4 % before the continuous batch's constants moved
    # the ridge to p 1.1), 48.0 % before the finite run, where a run had to end
    # before its 32,768-token outputs did (finite_run.py).
    ds = _subset(round_out, benchmark="deepseek-r1", scenario="Offline").overall()
    assert ds.rows == 8 and ds.median < 0.15


def test_system_out_median_and_p90(system_out: Validation) -> None:
    # Issue target: median <= 10 % (met: 8.4 % on the continuous batch; 8.6 % on
    # the batch ladder, 8.0 % with an Interactive level fitted, 9.1 % before the
    # integer-weight matmul rates, 10.1 % before the TTFT bound and the TPOT
    # spread), p90 <= 25 % (met: 23.7 %; 23.5 % on the ladder, 23.1 % with an
    # Interactive level, 26.6 % before the power-bound rates).
    overall = system_out.overall()
    assert overall.rows > 450
    assert overall.median <= 0.10 and overall.p90 <= 0.25


def test_system_out_new_benchmarks_and_interactive(system_out: Validation) -> None:
    # Targets: DeepSeek-R1 and Llama 3.1 405B median <= 20 % each (met: 5.4 %,
    # 5.0 % on the continuous batch; 4.5 %, 2.5 % on the ladder; 7.1 % and 5.3 %
    # with an Interactive level fitted, 11.3 % and 5.3 % before the finite run),
    # Interactive <= 15 % (met: 11.3 %; 13.6 % on the ladder; 15.1 % with an
    # Interactive level fitted, 17.4 % with each stack's own one too, 18.1 %
    # before the TTFT bound).
    assert _subset(system_out, benchmark="llama3.1-405b").overall().median <= 0.10
    assert _subset(system_out, benchmark="deepseek-r1").overall().median <= 0.10
    assert _subset(system_out, scenario="Interactive").overall().median <= 0.15


def test_planner_lands_within_2x_of_every_published_v51_server_row() -> None:
    every = load_results(["v5.1"]).rows
    rows = [r for r in every if r.scenario != "Offline"]
    assert len(rows) > 150
    offline = next(r for r in every if r.scenario == "Offline")
    with pytest.raises(ConfigError, match="Offline rows have no latency bounds"):
        plan_published_row(offline)
    misses = []
    for r in rows:
        got = plan_published_row(r)
        if not isinstance(got, Option) or not 0.5 <= got.accelerators / r.count <= 2:
            misses.append((r.label, getattr(got, "accelerators", got)))
    assert misses == []
