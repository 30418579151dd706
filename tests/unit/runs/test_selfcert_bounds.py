"""The lateness bound of self-certification scales with the latency bound a run is judged on."""

from __future__ import annotations

import numpy as np

from infermeter.runs.selfcert import CertBounds, certify


def test_bound_is_one_percent_of_the_latency_bound_and_at_least_1_ms() -> None:
    assert CertBounds.for_latency_bound(None).lateness_p99_ns == 1_000_000
    assert CertBounds.for_latency_bound(15_000_000).lateness_p99_ns == 1_000_000
    assert CertBounds.for_latency_bound(2_000_000_000).lateness_p99_ns == 20_000_000


def test_three_ms_lateness_is_client_bound_only_against_a_tight_bound() -> None:
    scheduled = np.arange(1000, dtype=np.int64) * 1_000_000
    issued = scheduled + 3_000_000  # every request 3 ms late
    loose = certify(
        scheduled_ns=scheduled,
        issued_ns=issued,
        sent_ns=None,
        cpu_s=0.1,
        wall_s=1.0,
        bounds=CertBounds.for_latency_bound(2_000_000_000),
    )
    tight = certify(
        scheduled_ns=scheduled,
        issued_ns=issued,
        sent_ns=None,
        cpu_s=0.1,
        wall_s=1.0,
        bounds=CertBounds.for_latency_bound(15_000_000),
    )
    assert not loose.client_bound
    assert tight.client_bound and "lateness" in tight.reasons[0]
