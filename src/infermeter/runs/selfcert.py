"""Client self-certification: was the load generator, not the server, the bottleneck?

Compares each request's intended (scheduled) and actual send time, and the
client's CPU use over the run, against bounds; a run past a bound is flagged
client-bound with advice.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from infermeter.loadgen.interfaces import NsArray

PERCENTILES = (50.0, 90.0, 99.0, 99.9)
MIN_LATENESS_NS = 1_000_000  # 1 ms: the issue's bound at 1,000 req/s
MIN_LATE_SENDS = 2


@dataclass(frozen=True, slots=True)
class CertBounds:
    """Past these the client is called the bottleneck."""

    lateness_p99_ns: int = MIN_LATENESS_NS
    # One Python process uses at most one core for its own work (the GIL).
    cpu_fraction: float = 0.9

    @classmethod
    def for_latency_bound(cls, bound_ns: int | None) -> CertBounds:
        """Lateness matters relative to what is judged: allow 1 % of the latency
        bound the run is held to (TTFT, or the Server latency), at least 1 ms."""
        if not bound_ns or bound_ns <= 0:
            return cls()
        return cls(lateness_p99_ns=max(MIN_LATENESS_NS, bound_ns // 100))


@dataclass(frozen=True, slots=True)
class ClientCertification:
    """Send lateness percentiles (ns), client CPU, and the verdict with advice."""

    send_lateness_ns: dict[str, int]
    issue_lateness_ns: dict[str, int]
    cpu_s: float
    wall_s: float
    requests: int
    client_bound: bool
    reasons: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    clock_error_ns: int | None = None

    @property
    def cpu_fraction(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_s_per_1000(self) -> float:
        return 1000.0 * self.cpu_s / self.requests if self.requests else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "send_lateness_ns": self.send_lateness_ns,
            "issue_lateness_ns": self.issue_lateness_ns,
            "cpu_s": round(self.cpu_s, 4),
            "wall_s": round(self.wall_s, 4),
            "cpu_fraction": round(self.cpu_fraction, 4),
            "cpu_s_per_1000_requests": round(self.cpu_s_per_1000, 4),
            "requests": self.requests,
            "client_bound": self.client_bound,
            "clock_error_ns": self.clock_error_ns,
            "reasons": self.reasons,
            "advice": self.advice,
        }


class CpuMeter:
    """CPU seconds of the whole client: this process, its waited-for children, and
    the client processes a SUT runs elsewhere (worker processes, Ray actors).

    ``clients`` is a SUT's ``client_cpu_s`` (CPU its client processes have used
    so far); servers a SUT starts (the ``sim`` endpoint) are not the client and
    are not counted.
    """

    def __init__(self, clients: Callable[[], float] | None = None) -> None:
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.client_processes_cpu_s = 0.0
        self._clients = clients
        self._cpu0 = 0.0
        self._remote0 = 0.0
        self._wall0 = 0.0

    @classmethod
    def of(cls, sut: object) -> CpuMeter:
        """A meter that also counts ``sut``'s client processes, where it has any."""
        clients = getattr(sut, "client_cpu_s", None)
        return cls(clients if callable(clients) else None)

    def __enter__(self) -> CpuMeter:
        self._remote0 = self._clients() if self._clients else 0.0
        self._cpu0 = _cpu_now()
        self._wall0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = time.perf_counter() - self._wall0
        own = _cpu_now() - self._cpu0
        if self._clients is not None:
            try:
                self.client_processes_cpu_s = self._clients() - self._remote0
            except Exception:  # a dead client: its CPU is lost, the run says why
                self.client_processes_cpu_s = 0.0
        self.cpu_s = own + self.client_processes_cpu_s


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def percentiles(values: NsArray) -> dict[str, int]:
    """p50/p90/p99/p99.9 and max of ``values`` (ns); empty dict when none."""
    if values.shape[0] == 0:
        return {}
    qs = np.percentile(values, PERCENTILES, method="higher")
    out = {f"p{p:g}": int(q) for p, q in zip(PERCENTILES, qs, strict=True)}
    out["max"] = int(values.max())
    return out


def certify(
    *,
    scheduled_ns: NsArray,
    issued_ns: NsArray,
    sent_ns: NsArray | None,
    cpu_s: float,
    wall_s: float,
    bounds: CertBounds | None = None,
    workers: int = 1,
    clock_error_ns: int | None = None,
    more_advice: str = "add worker processes (--workers N)",
) -> ClientCertification:
    """Judge the client from per-request times (absolute ns, -1 = never) and CPU.

    ``clock_error_ns``: how far remote clients' corrected stamps may be off;
    past the lateness bound, their times cannot be trusted to that bound.
    """
    bounds = bounds or CertBounds()
    ok = issued_ns >= 0
    late_ns = issued_ns[ok] - scheduled_ns[ok]
    if sent_ns is not None:
        sent_ok = ok & (sent_ns >= 0)
        send_late_ns = sent_ns[sent_ok] - scheduled_ns[sent_ok]
    else:
        send_late_ns = late_ns
    issue, send = percentiles(late_ns), percentiles(send_late_ns)
    reasons: list[str] = []
    p99 = send.get("p99", 0)
    # Below 100 requests the p99 is the maximum: one late send (the first
    # request of a point opening its connection) is not a client that cannot
    # keep up. Past the bound it takes more than one.
    late = int((send_late_ns > bounds.lateness_p99_ns).sum())
    if p99 > bounds.lateness_p99_ns and late >= MIN_LATE_SENDS:
        reasons.append(
            f"send lateness p99 {p99 / 1e6:.3f} ms > "
            f"{bounds.lateness_p99_ns / 1e6:g} ms"
        )
    fraction = cpu_s / wall_s if wall_s > 0 else 0.0
    if fraction > bounds.cpu_fraction * workers:
        reasons.append(
            f"client CPU {fraction:.0%} of {workers} core(s) > "
            f"{bounds.cpu_fraction:.0%}"
        )
    if clock_error_ns is not None and clock_error_ns > bounds.lateness_p99_ns:
        reasons.append(
            f"remote clients' clock offset uncertain by {clock_error_ns / 1e6:.3f} ms > "
            f"{bounds.lateness_p99_ns / 1e6:g} ms"
        )
    advice = _advice(reasons, fraction, workers, more_advice)
    return ClientCertification(
        send_lateness_ns=send,
        issue_lateness_ns=issue,
        cpu_s=cpu_s,
        wall_s=wall_s,
        requests=int(ok.sum()),
        client_bound=bool(reasons),
        reasons=reasons,
        advice=advice,
        clock_error_ns=clock_error_ns,
    )


# Below this share of its cores the client had time to spare: late sends were
# the machine's CPU going elsewhere, not the client falling behind.
IDLE_CLIENT_FRACTION = 0.5


def _advice(
    reasons: list[str], fraction: float, workers: int, more_advice: str
) -> list[str]:
    if not reasons:
        return []
    lateness_only = all(r.startswith("send lateness") for r in reasons)
    if lateness_only and fraction < IDLE_CLIENT_FRACTION * workers:
        # More client processes would not help: they wait for the same cores.
        return [
            f"the client used {fraction:.0%} of {workers} core(s), so its sends "
            "waited for a CPU busy elsewhere (a server or another process on this "
            "machine); run on a quieter machine or one with more cores, or lower "
            "the request rate / concurrency"
        ]
    return [more_advice, "or lower the request rate / concurrency"]
