"""Client self-certification from send times and CPU."""

from __future__ import annotations

import numpy as np

from infermeter.runs.selfcert import CertBounds, CpuMeter, certify, percentiles


def test_on_time_client_is_certified() -> None:
    scheduled = np.arange(0, 1000, dtype=np.int64) * 1_000_000
    cert = certify(
        scheduled_ns=scheduled,
        issued_ns=scheduled + 10_000,
        sent_ns=scheduled + 50_000,
        cpu_s=0.5,
        wall_s=1.0,
    )
    assert not cert.client_bound and cert.advice == []
    assert cert.send_lateness_ns["p99"] == 50_000
    assert cert.issue_lateness_ns["p50"] == 10_000
    assert cert.cpu_s_per_1000 == 0.5 and cert.requests == 1000


def test_late_sends_and_busy_cpu_are_flagged_with_advice() -> None:
    scheduled = np.arange(0, 100, dtype=np.int64)
    sent = scheduled + np.where(np.arange(100) >= 95, 5_000_000, 0)
    cert = certify(
        scheduled_ns=scheduled,
        issued_ns=scheduled,
        sent_ns=sent,
        cpu_s=0.99,
        wall_s=1.0,
        bounds=CertBounds(lateness_p99_ns=1_000_000),
    )
    assert cert.client_bound
    assert len(cert.reasons) == 2 and "p99 5.000 ms > 1 ms" in cert.reasons[0]
    assert any("--workers" in a for a in cert.advice)
    assert cert.as_dict()["client_bound"] is True


def test_never_issued_rows_are_ignored_and_workers_raise_cpu_bound() -> None:
    scheduled = np.zeros(4, dtype=np.int64)
    issued = np.array([0, 0, -1, -1], dtype=np.int64)
    cert = certify(
        scheduled_ns=scheduled,
        issued_ns=issued,
        sent_ns=None,
        cpu_s=1.5,
        wall_s=1.0,
        workers=2,
    )
    assert cert.requests == 2 and not cert.client_bound


def test_percentiles_and_cpu_meter() -> None:
    values = np.arange(1, 1001, dtype=np.int64)
    p = percentiles(values)
    assert (p["p50"], p["p99"], p["max"]) == (501, 991, 1000)  # "higher" method
    assert percentiles(np.array([], dtype=np.int64)) == {}
    with CpuMeter() as meter:
        sum(i * i for i in range(200_000))
    assert meter.cpu_s > 0 and meter.wall_s > 0


def test_one_late_send_of_a_few_is_an_outlier_not_a_bottleneck() -> None:
    # 8 requests at 1/s: the first opened its connection (14 ms); p99 is the max.
    scheduled = np.arange(8, dtype=np.int64) * 1_000_000_000
    sent = scheduled + 200_000
    sent[0] += 14_000_000
    cert = certify(
        scheduled_ns=scheduled, issued_ns=scheduled, sent_ns=sent, cpu_s=0.01, wall_s=8
    )
    assert cert.send_lateness_ns["p99"] > 1_000_000
    assert not cert.client_bound and cert.reasons == []
    sent[1] += 14_000_000  # two late: the client did fall behind
    cert = certify(
        scheduled_ns=scheduled, issued_ns=scheduled, sent_ns=sent, cpu_s=0.01, wall_s=8
    )
    assert cert.client_bound


def test_late_sends_from_an_idle_client_blame_the_busy_machine_not_the_client() -> None:
    # A server on the same two cores held the CPU: the client used 8 % of a core.
    scheduled = np.arange(200, dtype=np.int64) * 10_000_000
    sent = scheduled + 100_000
    sent[::20] += 300_000_000  # 5 % of sends 300 ms late
    cert = certify(
        scheduled_ns=scheduled, issued_ns=scheduled, sent_ns=sent, cpu_s=0.16, wall_s=2
    )
    assert cert.client_bound
    assert len(cert.advice) == 1 and "busy elsewhere" in cert.advice[0]
    assert "--workers" not in cert.advice[0]
    # A client that used its core: more client processes are the advice.
    busy = certify(
        scheduled_ns=scheduled, issued_ns=scheduled, sent_ns=sent, cpu_s=1.9, wall_s=2
    )
    assert "--workers" in busy.advice[0]
