"""The 'planned run' line says what the engine will issue, not more."""

from __future__ import annotations

import numpy as np

from infermeter.loadgen.schedule import generate_loadable_sets, generate_queries
from infermeter.loadgen.settings import RunSettings, Scenario, effective_settings
from infermeter.runs.guard import planned_run


def _server(total: int, *, equal_issue: bool = True) -> tuple[str, int]:
    requested = RunSettings(
        scenario=Scenario.SERVER,
        server_target_qps=200.0,
        min_duration_ms=3_000,
        sample_concatenate_permutation=equal_issue,  # on for llama2-70b
    )
    eff = effective_settings(
        requested, qsl_total_count=total, qsl_performance_count=24_576
    )
    loaded = generate_loadable_sets(eff, total)[0]
    issued = int(generate_queries(eff, loaded).scheduled_ns.shape[0])
    return planned_run(eff, total), issued


def test_equal_issue_pads_to_the_loaded_set_not_the_benchmarks_count() -> None:
    # 1,024 synthetic samples: the engine issues 1,024 queries (about 5 s at
    # 200 QPS), not the 24,576 of the benchmark's performance sample count.
    line, issued = _server(1_024)
    assert issued == 1_024
    assert line.startswith("1,024 queries at 200 QPS ≈ 5 s")
    assert "(equal issue: each of the 1,024 loaded samples as often)" in line
    assert "--performance-sample-count N shortens it" in line


def test_a_full_dataset_plans_its_whole_set() -> None:
    line, issued = _server(24_576)
    assert issued == 24_576
    assert line.startswith("24,576 queries at 200 QPS ≈ 2 min")


def test_the_duration_decides_without_equal_issue() -> None:
    line, issued = _server(1_024, equal_issue=False)
    queries = int(line.split(" ")[0].replace(",", ""))
    # Poisson: the plan is the expected count (+1 %); the draw lands near it.
    assert abs(queries - issued) <= 0.1 * issued
    assert np.isclose(queries, 606, atol=10)
    assert "shortens it" not in line and line.endswith("(the minimum duration, 3 s)")
