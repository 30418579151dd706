"""A simulated accelerator system as a SUT: completions follow the serving simulator.

Each issued sample becomes a request at its scheduled time with token lengths
drawn (seeded, per sample index) from the benchmark's workload; first token
and completion are delivered through ``clock.call_at``, so under
``infermeter.testing.ManualClock`` a Server run goes through the real engine
in virtual time. Results are simulated (derived), never measurements.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from infermeter.clock import Clock
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.perfmodel.arrivals import workload_lengths
from infermeter.perfmodel.online import OnlineSimulator
from infermeter.perfmodel.specs import get_workload
from infermeter.suts.registry import SutContext, register


class SimulatedSUT:
    """``count`` x ``accelerator`` serving ``model`` (calibrated roofline + simulator)."""

    def __init__(
        self,
        clock: Clock,
        *,
        accelerator: str = "h100-sxm",
        count: int = 8,
        model: str = "llama2-70b",
        precision: str | None = None,
        tp: int | None = None,
        samples: int = 24_576,
        seed: int = 0,
    ) -> None:
        self.clock = clock
        self.sim = OnlineSimulator.for_system(
            accelerator, count, model, precision=precision, tp=tp
        )
        self.name = f"simulated {count}x{accelerator} {model}"
        self._isl, self._osl = workload_lengths(get_workload(model), samples, seed)

    def lengths(self, sample_index: int) -> tuple[int, int]:
        k = sample_index % self._isl.shape[0]
        return int(self._isl[k]), int(self._osl[k])

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        order = np.argsort(batch.scheduled_ns, kind="stable")
        for k in order.tolist():
            ids = batch.ids[k : k + 1]
            isl, osl = self.lengths(int(batch.sample_indices[k]))
            t = self.sim.submit(int(batch.scheduled_ns[k]), isl, osl)
            self.clock.call_at(t.first_token_ns, partial(sink.first_token, ids))
            self.clock.call_at(
                t.completed_ns, partial(sink.complete, ids, n_tokens=osl)
            )

    def flush_queries(self) -> None:
        """Nothing buffered: every sample is already scheduled on the clock."""


@register("simulated")
def _factory(context: SutContext) -> SimulatedSUT:
    tp = context.option("tp", "")
    return SimulatedSUT(
        context.clock,
        accelerator=context.option("accelerator", "h100-sxm"),
        count=int(context.float_option("count", 8)),
        model=context.option("model", context.benchmark or "llama2-70b"),
        precision=context.option("precision", "") or None,
        tp=int(tp) if tp else None,
        seed=int(context.float_option("seed", 0)),
    )
