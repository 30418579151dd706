"""A fake SUT with configurable latency, tokens and faults; completes through the clock's timers.

Under ``infermeter.testing.ManualClock`` it runs in virtual time; under the
real clock its completions come from a timer thread. Latency per sample is
``latency_ns`` (or, on token runs, ``ttft_ns + (n_tokens - 1) * tpot_ns``),
times a seeded log-normal jitter.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock
from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import (
    CompletionSink,
    IdArray,
    IndexArray,
    QueryBatch,
)
from infermeter.suts.registry import SutContext, register

MS = 1_000_000
# Sample index -> (response bytes, token count): answers instead of the payload.
Responder = Callable[[int], tuple[bytes, int]]


class FakeSUT:
    """Completes each sample after a configurable delay; can fail or hang on purpose."""

    name = "FakeSUT"

    def __init__(
        self,
        clock: Clock,
        *,
        latency_ns: int = 1 * MS,
        token_run: bool = False,
        ttft_ns: int = 50 * MS,
        tpot_ns: int = 10 * MS,
        output_tokens: int = 32,
        jitter: float = 0.0,
        fail_every: int = 0,
        hang_after: int = -1,
        seed: int = 0,
        payload: bytes = b"\x01\x02\x03\x04",
        responder: Responder | None = None,
    ) -> None:
        self.clock = clock
        self.latency_ns = latency_ns
        self.token_run = token_run
        self.ttft_ns = ttft_ns
        self.tpot_ns = tpot_ns
        self.output_tokens = max(2, output_tokens)
        self.jitter = jitter
        self.fail_every = fail_every
        self.hang_after = hang_after
        self.payload = payload
        self.responder = responder
        self._rng = np.random.default_rng(seed)
        self._seen = 0

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        ids, indices = batch.ids, batch.sample_indices
        if self.hang_after >= 0:
            keep = max(0, self.hang_after - self._seen)
            ids, indices = ids[:keep], indices[:keep]
        self._seen += len(batch)
        if ids.shape[0] == 0:
            return
        scale = self._scale(ids.shape[0])
        now = self.clock.now_ns()
        if self.jitter == 0.0:
            self._schedule(ids, indices, now, sink, 1.0)
        else:
            for k in range(ids.shape[0]):
                self._schedule(
                    ids[k : k + 1], indices[k : k + 1], now, sink, float(scale[k])
                )

    def _scale(self, n: int) -> npt.NDArray[np.float64]:
        if self.jitter == 0.0:
            return np.ones(n)
        return self._rng.lognormal(0.0, self.jitter, n)

    def _schedule(
        self,
        ids: IdArray,
        indices: IndexArray,
        now: int,
        sink: CompletionSink,
        scale: float,
    ) -> None:
        done = now + int(self.latency_ns * scale)
        if self.token_run:
            ttft = int(self.ttft_ns * scale)
            done = now + ttft + int((self.output_tokens - 1) * self.tpot_ns * scale)
            self.clock.call_at(
                now + ttft, lambda: sink.first_token(ids, [self.payload] * len(ids))
            )
        self.clock.call_at(done, lambda: self._finish(ids, indices, sink))

    def _finish(self, ids: IdArray, indices: IndexArray, sink: CompletionSink) -> None:
        if self.fail_every:
            bad = ids % self.fail_every == self.fail_every - 1
            if bad.any():
                sink.fail(ids[bad], "injected failure (fake SUT fail_every)")
            ids, indices = ids[~bad], indices[~bad]
            if ids.shape[0] == 0:
                return
        data: list[bytes] = [self.payload] * len(ids)
        tokens: npt.NDArray[np.int64] | int = self.output_tokens
        if self.responder is not None:
            answers = [self.responder(int(i)) for i in indices.tolist()]
            data = [a[0] for a in answers]
            tokens = np.asarray([a[1] for a in answers], dtype=np.int64)
        if self.token_run:
            sink.complete(ids, n_tokens=tokens, data=data)
        else:
            sink.complete(ids, data=data)

    def flush_queries(self) -> None:
        pass


@register("fake")
def _factory(context: SutContext) -> FakeSUT:
    return FakeSUT(
        context.clock,
        latency_ns=int(context.float_option("latency_ms", 1.0) * MS),
        token_run=context.token_run,
        ttft_ns=int(context.float_option("ttft_ms", 50.0) * MS),
        tpot_ns=int(context.float_option("tpot_ms", 10.0) * MS),
        output_tokens=int(context.float_option("output_tokens", 32)),
        jitter=context.float_option("jitter", 0.0),
        fail_every=int(context.float_option("fail_every", 0)),
        hang_after=int(context.float_option("hang_after", -1, minimum=-1)),
        seed=int(context.float_option("seed", 0)),
        responder=_responder(context),
    )


def _responder(context: SutContext) -> Responder | None:
    """``--sut-opt answers=reference [--sut-opt wrong=0.5]``: reply from the dataset."""
    mode = context.option("answers", "")
    if not mode:
        return None
    if mode != "reference":
        raise ConfigError(
            f"SUT option answers={mode!r} is unknown; pass --sut-opt answers=reference"
        )
    from infermeter.workloads.accuracy.answers import answer, is_wrong
    from infermeter.workloads.datasets.base import DatasetQSL
    from infermeter.workloads.registry import get_benchmark

    qsl = context.qsl
    if not isinstance(qsl, DatasetQSL):
        raise ConfigError("answers=reference needs a dataset with references.")
    bench = get_benchmark(context.benchmark)
    fraction = context.float_option("wrong", 0.0)

    def respond(index: int) -> tuple[bytes, int]:
        return answer(bench, qsl.sample(index), wrong=is_wrong(index, fraction))

    return respond
