"""Which INVALID reasons a late client can cause (infermeter.testing.verdicts)."""

from __future__ import annotations

import pytest

from infermeter.testing.verdicts import only_latency_reasons


@pytest.mark.parametrize(
    "reasons",
    [
        ["TTFT constrain not met: Reduce target QPS to improve latency."],
        ["Reduce target QPS to improve latency."],
        ["TPOT early stopping: Run unsuccessful. Processed 640 queries."],
        ["  * early stopping: Run unsuccessful."],
        [
            "TTFT constrain not met: Reduce target QPS to improve latency.\n"
            " * TPOT constrain not met: Reduce target QPS to improve latency.",
            "TTFT early stopping: Run unsuccessful.",
        ],
        [
            "TTFT early stopping: Run unsuccessful.",
            "261 samples failed: 261 x timeout: no connection within 10 s",
        ],
    ],
)
def test_latency_bounds_and_early_stopping_are_a_late_clients(
    reasons: list[str],
) -> None:
    assert only_latency_reasons(reasons)


@pytest.mark.parametrize(
    "reasons",
    [
        [],
        ["3 samples failed: 3 x connect: refused"],
        ["4 samples failed: 2 x timeout: no connection within 10 s; 2 x HTTP 500"],
        ["2 samples failed: 2 x timeout: request took over 600 s"],
        ["TTFT early stopping: Run unsuccessful.", "ERROR: the SUT raised"],
        ["The test exited early, before enough queries were issued."],
        ["interrupted by SIGINT"],
    ],
)
def test_anything_else_is_not_the_machines_fault(reasons: list[str]) -> None:
    assert not only_latency_reasons(reasons)
