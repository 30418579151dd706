"""What a finished performance phase reports: its latency stats, counts and verdict.

Plain data: ``metrics.summarize`` computes a ``Summary`` from a phase and
``validity.judge`` fills in its verdict fields.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from infermeter.loadgen.settings import NS_PER_S, EffectiveSettings, Scenario

PERCENTILES = (0.50, 0.90, 0.95, 0.97, 0.99, 0.999)
I64 = npt.NDArray[np.int64]


@dataclass(slots=True)
class EarlyStoppingResult:
    ok: bool
    text: str  # lines as LoadGen prints them under "Early Stopping Result:"
    estimate_ns: int = 0
    estimate_99_ns: int = 0


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """min / max / mean and the percentile grid of one latency series (ns)."""

    count: int
    min: int
    max: int
    mean: int
    percentiles: dict[float, int]
    target: int
    sorted_ns: I64 = field(repr=False, compare=False)

    @classmethod
    def of(
        cls, values: I64, target_percentile: float, *, owned: bool = False
    ) -> LatencyStats | None:
        """Stats of ``values``; ``owned`` lets it sort them in place (no copy)."""
        if values.shape[0] == 0:
            return None
        if owned:
            values.sort()
            ordered = values
        else:
            ordered = np.sort(values)
        n = int(ordered.shape[0])
        pick = {p: int(ordered[min(n - 1, int(n * p))]) for p in PERCENTILES}
        return cls(
            count=n,
            min=int(ordered[0]),
            max=int(ordered[-1]),
            mean=int(int(ordered.sum()) // n),
            percentiles=pick,
            target=int(ordered[min(n - 1, int(n * target_percentile))]),
            sorted_ns=ordered,
        )


@dataclass(slots=True)
class Summary:
    """Everything the summary, the detail log and run.json report."""

    settings: EffectiveSettings
    query_count: int
    sample_count: int
    samples_failed: int
    samples_missing: int
    failure_reasons: dict[str, int]
    latency: LatencyStats | None
    query_latency: LatencyStats | None
    ttft: LatencyStats | None
    tpot: LatencyStats | None
    token_count: int
    final_scheduled_s: float
    final_issued_s: float
    final_done_s: float
    max_latency_s: float
    overlatency_count: int
    issue_lateness: LatencyStats | None
    early_stopping: EarlyStoppingResult | None
    es_ttft: EarlyStoppingResult | None
    es_tpot: EarlyStoppingResult | None
    min_duration_met: bool
    min_queries_met: bool
    perf_constraints_met: bool
    perf_recommendation: str
    min_duration_recommendation: str
    errors: Counter[str]
    warnings: list[str]

    @property
    def scenario(self) -> Scenario:
        return self.settings.scenario

    @property
    def early_stopping_met(self) -> bool:
        parts = [self.early_stopping, self.es_ttft, self.es_tpot]
        return all(p.ok for p in parts if p is not None)

    @property
    def loadgen_valid(self) -> bool:
        """LoadGen's own verdict (what ``Result is :`` says in LoadGen)."""
        return (
            self.min_duration_met
            and self.min_queries_met
            and self.perf_constraints_met
            and self.early_stopping_met
        )

    @property
    def loadgen_invalid_reason(self) -> str:
        """LoadGen's ``result_invalid_reason`` text (it leaves early stopping out)."""
        text = ""
        if not self.perf_constraints_met:
            text += self.perf_recommendation + " "
        if not self.min_duration_met:
            text += self.min_duration_recommendation + " "
        if not self.min_queries_met:
            text += "The test exited early, before enough queries were issued."
        return text

    @property
    def valid(self) -> bool:
        return self.loadgen_valid and not self.errors and not self.samples_failed

    @property
    def reasons(self) -> list[str]:
        """Why the run is INVALID, one line each; empty when VALID."""
        out = []
        if not self.perf_constraints_met:
            out.append(self.perf_recommendation)
        if not self.min_duration_met:
            out.append(self.min_duration_recommendation)
        if not self.min_queries_met:
            out.append("The test exited early, before enough queries were issued.")
        for part, name in (
            (self.early_stopping, ""),
            (self.es_ttft, "TTFT "),
            (self.es_tpot, "TPOT "),
        ):
            if part is not None and not part.ok:
                out.append(
                    f"{name}early stopping: "
                    + " ".join(line.strip(" *") for line in part.text.splitlines())
                )
        if self.samples_failed:
            detail = "; ".join(f"{n} x {r}" for r, n in self.failure_reasons.items())
            out.append(f"{self.samples_failed} samples failed: {detail}")
        out.extend(f"ERROR: {message}" for message in self.errors)
        return out

    # -- headline metrics (LoadGen formulas) ----------------------------------------
    @property
    def samples_per_second(self) -> float:
        """Offline: samples / max latency."""
        return self.sample_count / self.max_latency_s if self.max_latency_s else 0.0

    @property
    def completed_samples_per_second(self) -> float:
        """Server: (samples - 1) / time the last issued query completed."""
        return _rate(self.sample_count - 1, self.final_done_s)

    @property
    def scheduled_samples_per_second(self) -> float:
        """The offered rate: every scheduled sample counts, failed or not (a
        run where nothing completed was still scheduled at its target rate)."""
        return _rate(self.scheduled_samples - 1, self.final_scheduled_s)

    @property
    def scheduled_samples(self) -> int:
        """Samples of the issued queries: completed, failed or never completed."""
        return self.sample_count + self.samples_failed + self.samples_missing

    @property
    def qps_with_loadgen_overhead(self) -> float:
        return _rate(self.sample_count - 1, self.final_issued_s)

    @property
    def qps_without_loadgen_overhead(self) -> float:
        return (
            NS_PER_S / self.latency.mean if self.latency and self.latency.mean else 0.0
        )

    @property
    def tokens_per_second(self) -> float:
        """Offline: tokens / max latency; Server: tokens / last query completion."""
        if self.scenario is Scenario.OFFLINE:
            return _rate(self.token_count, self.max_latency_s)
        return _rate(self.token_count, self.final_done_s)


def _rate(count: float, seconds: float) -> float:
    # LoadGen's ``samples - 1`` is -1 when nothing completed: no rate is 0, never less.
    return max(0.0, count) / seconds if seconds > 0 else 0.0
