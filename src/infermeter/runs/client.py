"""What the client side of a run reports: SUT stats, send times and self-certification."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.engine import PhaseResult
from infermeter.loadgen.metrics import sample_origins
from infermeter.loadgen.runner import RunOutcome
from infermeter.runs.fleet_stats import fleet_block
from infermeter.runs.selfcert import CertBounds, CpuMeter, certify

I64 = npt.NDArray[np.int64]


@dataclass
class ClientReport:
    """Collected from the SUT before it closes; written into run.json and records.npz."""

    stats: dict[str, Any] | None = None
    sent_ns: I64 | None = (
        None  # absolute engine-clock send time per sample id, -1 = none
    )
    certification: dict[str, object] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # the SUT's effective settings
    fleet: dict[str, Any] | None = None  # per-replica figures of a fleet SUT


def scale_of(sut: object) -> dict[str, Any]:
    """How many client processes ``sut`` runs, its clock error bound and its advice."""
    out: dict[str, Any] = {"workers": int(getattr(sut, "workers", 1) or 1)}
    bound = getattr(sut, "clock_error_bound_ns", None)
    if callable(bound):
        out["clock_error_ns"] = int(bound())
    advice = getattr(sut, "scale_advice", None)
    if isinstance(advice, str):
        out["more_advice"] = advice
    return out


def collect(sut: object, outcome: RunOutcome, meter: CpuMeter) -> ClientReport:
    """SUT counters and send times (SUTs that have them), and the client's verdict on itself."""
    report = ClientReport()
    stats = getattr(sut, "stats", None)
    if callable(stats):
        report.stats = stats()
    params = getattr(sut, "params", None)
    if callable(params):
        report.params = params()
    phase = outcome.performance
    report.fleet = fleet_block(sut, report.stats, phase)
    if phase is None:
        return report
    n = phase.samples_issued
    send_times = getattr(sut, "send_times", None)
    if callable(send_times):
        ids, times = send_times()
        sent = np.full(n, -1, dtype=np.int64)
        keep = (ids >= 0) & (ids < n)
        sent[ids[keep]] = times[keep]
        report.sent_ns = sent
    settings = outcome.settings
    bound = (
        settings.requested.ttft_latency
        if settings.is_token_run
        else settings.target_latency_ns
    )
    verdict = certify(
        bounds=CertBounds.for_latency_bound(
            bound if settings.scenario.value == "Server" else None
        ),
        scheduled_ns=sample_origins(phase),
        issued_ns=phase.records.issued_ns[:n],
        sent_ns=report.sent_ns,
        cpu_s=meter.cpu_s,
        wall_s=meter.wall_s,
        **scale_of(sut),
    )
    report.certification = verdict.as_dict()
    if not _any_completed(phase):
        # Nothing answered: the endpoint, not the client, is what failed.
        report.certification.update(
            client_bound=False,
            reasons=[],
            advice=[],
            note="no sample completed: the client was not judged",
        )
    return report


def _any_completed(phase: PhaseResult) -> bool:
    n = phase.samples_issued
    rec = phase.records
    return bool(((rec.status[:n] == 0) & (rec.completed_ns[:n] >= 0)).any())
