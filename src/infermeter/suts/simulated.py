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
from infermeter.perfmodel.live import LiveSimulator, StepEvents
from infermeter.perfmodel.specs import get_workload
from infermeter.suts.registry import SutContext, register


class SimulatedSUT:
    """``count`` x ``accelerator`` serving ``model`` (calibrated roofline + simulator).

    Requests join the live simulator at their scheduled times; its steps run on
    the engine clock (``clock.call_at``), so later arrivals slow earlier
    requests exactly as in the batch simulator.
    """

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
        self.sim = LiveSimulator.for_system(
            accelerator, count, model, precision=precision, tp=tp
        )
        self.name = f"simulated {count}x{accelerator} {model}"
        self._isl, self._osl = workload_lengths(get_workload(model), samples, seed)
        self._owner: dict[int, tuple[int, int, CompletionSink]] = {}
        self._armed: int | None = None

    def lengths(self, sample_index: int) -> tuple[int, int]:
        k = sample_index % self._isl.shape[0]
        return int(self._isl[k]), int(self._osl[k])

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        order = np.argsort(batch.scheduled_ns, kind="stable")
        for k in order.tolist():
            isl, osl = self.lengths(int(batch.sample_indices[k]))
            rid = self.sim.add(int(batch.scheduled_ns[k]), isl, osl)
            self._owner[rid] = (int(batch.ids[k]), osl, sink)
        self._arm()

    def flush_queries(self) -> None:
        """Nothing buffered: the simulator's steps are already on the clock."""

    def _arm(self) -> None:
        due = self.sim.next_event_ns()
        if due is not None and (self._armed is None or due < self._armed):
            self._armed = due
            self.clock.call_at(due, self._tick)

    def _tick(self) -> None:
        self._armed = None
        for events in self.sim.advance(self.clock.now_ns()):
            # A step's tokens exist when it ends, which may be later than now.
            self.clock.call_at(events.end_ns, partial(self._deliver, events))
        self._arm()

    def _deliver(self, events: StepEvents) -> None:
        for rid in events.first_token.tolist():
            sample_id, _, sink = self._owner[rid]
            sink.first_token(np.asarray([sample_id], dtype=np.int64))
        for rid in events.completed.tolist():
            sample_id, osl, sink = self._owner.pop(rid)
            sink.complete(np.asarray([sample_id], dtype=np.int64), n_tokens=osl)


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
