"""The package's public surface is small, sorted and importable (httpx's rule)."""

from __future__ import annotations

import infermeter


def test_all_is_sorted_and_every_name_exists() -> None:
    assert infermeter.__all__ == sorted(infermeter.__all__)
    for name in infermeter.__all__:
        assert hasattr(infermeter, name), name


def test_the_engine_runs_from_the_top_level_names() -> None:
    from infermeter.suts.null import NullSUT
    from infermeter.testing import InMemoryQSL, ManualClock

    settings = infermeter.RunSettings(
        scenario=infermeter.Scenario.OFFLINE, min_duration_ms=0
    )
    outcome = infermeter.run_test(
        NullSUT(), InMemoryQSL(16), settings, clock=ManualClock()
    )
    assert outcome.summary is not None
    assert outcome.summary.sample_count == 100  # min_query_count samples in one query
