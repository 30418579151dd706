"""A fake SUT for the MLPerf audit tests: honest by default, or built to cheat one of them.

One worker serves the samples in order, ``latency_ms`` each, so throughput
is finite and caching would show. Responses are a function of the sample
index: int32 values, or on token runs int32 token ids ending with one EOS,
``token_count`` equal to their number and the first token reported first.

``--sut-opt cheat=...`` breaks one rule on purpose:

* ``cache``: a sample equal to the one before is answered from a cache,
  ``cache_speedup`` (100) times faster (TEST04 repeats one sample; normal
  runs rarely do);
* ``perf-mode``: answers differently in performance mode (TEST01);
* ``first-token``: reports a first token the output does not start with (TEST06);
* ``eos``: ends the output with several EOS tokens (TEST06);
* ``token-count``: reports one token more than it returns (TEST06).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from infermeter.clock import Clock
from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.loadgen.settings import Mode
from infermeter.suts.registry import SutContext, register

MS = 1_000_000
# Samples done within this of the first of a group complete together (one
# timer per group): keeps a fast Offline run from drowning in timers.
GROUP_NS = MS // 2
CHEATS = ("none", "cache", "perf-mode", "first-token", "eos", "token-count")


class AuditFakeSUT:
    """Serves samples one after another; answers depend only on the sample index."""

    name = "AuditFakeSUT"

    def __init__(
        self,
        clock: Clock,
        *,
        mode: Mode = Mode.PERFORMANCE_ONLY,
        latency_ns: int = 1 * MS,
        token_run: bool = False,
        output_tokens: int = 8,
        eos_id: int = 2,
        cheat: str = "none",
        cache_speedup: float = 100.0,
    ) -> None:
        if cheat not in CHEATS:
            raise ConfigError(
                f"Unknown cheat {cheat!r}. Known: {', '.join(CHEATS)}; "
                "pass e.g. --sut-opt cheat=cache"
            )
        self.clock = clock
        self.mode = mode
        self.latency_ns = latency_ns
        self.token_run = token_run
        self.output_tokens = max(2, output_tokens)
        self.eos_id = eos_id
        self.cheat = cheat
        self.cache_speedup = max(1.0, cache_speedup)
        self._busy_until = 0
        self._last = -1

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        now = self.clock.now_ns()
        indices = batch.sample_indices.tolist()
        starts, dones = [], []
        for index in indices:
            start = max(now, self._busy_until)
            self._busy_until = start + self._cost(index)
            starts.append(start)
            dones.append(self._busy_until)
        wanted = sink.wants_data(batch.ids)
        for lo, hi in _groups(dones):
            self._answer(batch, indices, wanted, (starts, dones), (lo, hi), sink)

    def _cost(self, index: int) -> int:
        cached = self.cheat == "cache" and index == self._last
        self._last = index
        return int(self.latency_ns / self.cache_speedup) if cached else self.latency_ns

    def _answer(
        self,
        batch: QueryBatch,
        indices: list[int],
        wanted: np.ndarray,
        times: tuple[list[int], list[int]],
        group: tuple[int, int],
        sink: CompletionSink,
    ) -> None:
        """Samples ``lo:hi`` complete together when the last of them is done."""
        (starts, dones), (lo, hi) = times, group
        ids = batch.ids[lo:hi]
        keep = bool(wanted[lo:hi].any())
        if not self.token_run:
            data = [self.response(i) for i in indices[lo:hi]] if keep else None
            self._at(dones[hi - 1], lambda: sink.complete(ids, data=data))
            return
        outputs = [self.tokens(i) for i in indices[lo:hi]]
        firsts = [t[:1] + (1 if self.cheat == "first-token" else 0) for t in outputs]
        counts = np.asarray([len(t) for t in outputs], dtype=np.int64)
        counts += 1 if self.cheat == "token-count" else 0
        first_at = max(
            a + (b - a) // 4 for a, b in zip(starts[lo:hi], dones[lo:hi], strict=True)
        )
        self._at(
            first_at,
            lambda: sink.first_token(
                ids, [f.tobytes() for f in firsts] if keep else None
            ),
        )
        self._at(
            dones[hi - 1],
            lambda: sink.complete(
                ids,
                n_tokens=counts,
                data=[t.tobytes() for t in outputs] if keep else None,
            ),
        )

    def _at(self, when: int, action: Callable[[], None]) -> None:
        self.clock.call_at(when, action)

    def response(self, index: int) -> bytes:
        """The answer to sample ``index`` (a different one in performance mode if cheating)."""
        if self.cheat == "perf-mode" and self.mode is Mode.PERFORMANCE_ONLY:
            index += 1
        return np.asarray([index, (index * 7 + 3) % 1000, 0xABC], np.int32).tobytes()

    def tokens(self, index: int) -> np.ndarray:
        """Token ids of sample ``index``: ``output_tokens + index % 4`` of them, EOS last."""
        n = self.output_tokens + index % 4
        body = (index * 31 + np.arange(n - 1) * 7) % 20000 + 3  # never the EOS id 2
        out = np.append(body, self.eos_id).astype(np.int32)
        if self.cheat == "eos":
            out = np.append(out, [self.eos_id, self.eos_id]).astype(np.int32)
        return out

    def flush_queries(self) -> None:
        pass


def _groups(dones: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive samples done within ``GROUP_NS`` of the run's first."""
    out, lo = [], 0
    for k in range(1, len(dones) + 1):
        if k == len(dones) or dones[k] - dones[lo] >= GROUP_NS:
            out.append((lo, k))
            lo = k
    return out


@register("audit-fake")
def _factory(context: SutContext) -> AuditFakeSUT:
    return AuditFakeSUT(
        context.clock,
        mode=context.mode,
        latency_ns=int(context.float_option("latency_ms", 1.0) * MS),
        token_run=context.token_run,
        output_tokens=int(context.float_option("output_tokens", 8)),
        eos_id=int(context.float_option("eos", 2)),
        cheat=context.option("cheat", "none"),
        cache_speedup=context.float_option("cache_speedup", 100.0),
    )
