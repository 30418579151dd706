"""One model replica under continuous batching: admission, chunked prefill, decode steps.

A replica admits waiting requests FIFO while the batch has room and the KV
cache can reserve ``ISL + OSL`` tokens for them; each step decodes one token
(or the accepted tokens of multi-token prediction) for every sequence past its
prefill and spends a token budget on the prefills in arrival order.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infermeter.perfmodel.arrivals import IntArray
from infermeter.perfmodel.roofline import Deployment, Efficiency, step_time_one

MODE_MIXED = "mixed"
MODE_PREFILL = "prefill"
MODE_DECODE = "decode"
BoolArray = npt.NDArray[np.bool_]
_NONE: IntArray = np.zeros(0, dtype=np.int64)  # a step that finished no such request
_NONE.flags.writeable = False


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What a step finished: its end time, first tokens, completions, handoffs."""

    end_ns: int
    first_token: IntArray
    completed: IntArray
    prefilled: IntArray  # prefill-only replicas: requests ready for a decode replica


class Replica:
    """Mutable state of one replica; the simulator drives it step by step."""

    def __init__(
        self,
        dep: Deployment,
        eff: Efficiency,
        *,
        mode: str = MODE_MIXED,
        chunk_tokens: int = 2048,
        mtp_accept: float = 1.0,
        mtp_draft: int = 0,
    ) -> None:
        self.dep, self.eff, self.mode = dep, eff, mode
        self.chunk_tokens = chunk_tokens
        self.mtp_accept, self.mtp_draft = mtp_accept, mtp_draft
        self.kv_capacity = dep.kv_capacity_tokens()
        self.kv_used = 0
        self.waiting: deque[int] = deque()
        self.cached_prefixes: set[int] = set()
        empty = np.zeros(0, dtype=np.int64)
        self.ids, self.ctx, self.todo, self.made, self.osl, self.reserve = (
            empty.copy() for _ in range(6)
        )
        self._accepted = 0.0

    @property
    def load(self) -> int:
        return int(self.ids.shape[0]) + len(self.waiting)

    @property
    def busy(self) -> bool:
        return self.ids.shape[0] > 0 or bool(self.waiting)

    def admit(
        self, isl: IntArray, osl: IntArray, skip: IntArray, expected_osl: int
    ) -> None:
        """Move waiting requests into the batch while the batch and KV cache allow.

        A request reserves its prompt plus ``expected_osl`` KV tokens: the
        scheduler cannot know a request's real output length, and reserving the
        mean lets long outputs borrow from short ones, as paged KV does on
        average. ``skip`` is the prompt prefix already cached, per request.
        """
        new: list[int] = []
        room = self.dep.max_batch - int(self.ids.shape[0])
        while self.waiting and len(new) < room:
            rid = self.waiting[0]
            need = int(isl[rid]) + expected_osl
            if self.kv_used + need > self.kv_capacity:
                break  # FIFO: the head waits for KV space, no overtaking
            self.kv_used += need
            new.append(self.waiting.popleft())
        if not new:
            return
        idx = np.asarray(new, dtype=np.int64)
        decode_only = self.mode == MODE_DECODE
        todo = np.zeros_like(idx) if decode_only else isl[idx] - skip[idx]
        self.ids = np.concatenate([self.ids, idx])
        self.ctx = np.concatenate([self.ctx, isl[idx] - todo])
        self.todo = np.concatenate([self.todo, todo])
        self.made = np.concatenate(
            [self.made, np.ones_like(idx) if decode_only else 0 * idx]
        )
        self.osl = np.concatenate([self.osl, osl[idx]])
        self.reserve = np.concatenate([self.reserve, isl[idx] + expected_osl])

    def _tokens_this_step(self) -> int:
        # Multi-token prediction: a fractional mean of accepted tokens per step,
        # spread deterministically over steps.
        before = int(self._accepted)
        self._accepted += self.mtp_accept
        return int(self._accepted) - before

    def step(self, now_ns: int) -> StepOutcome:
        """Run one step starting at ``now_ns``; the batch must not be empty."""
        decoding = self.todo == 0
        n_dec = int(np.count_nonzero(decoding))
        if n_dec == decoding.shape[0]:
            return self._decode_step(now_ns)
        before = np.cumsum(self.todo) - self.todo
        take = np.where(
            decoding,
            0,
            np.minimum(self.todo, np.maximum(0, self.chunk_tokens - before)),
        )
        n_pre = int(take.sum())
        ctx_dec = float(self.ctx[decoding].mean()) if n_dec else 0.0
        ctx_pre = (
            float(((self.ctx + take / 2.0) * take).sum() / n_pre) if n_pre else 0.0
        )
        end = self._end(now_ns, n_dec, ctx_dec, n_pre, ctx_pre)
        k = self._tokens_this_step() if n_dec else 0
        self.todo = self.todo - take
        decoded = np.where(decoding, k, 0)
        self.ctx = self.ctx + take + decoded
        finished_prefill = (~decoding) & (self.todo == 0) & (take > 0)
        self.made = self.made + decoded + finished_prefill
        done = (self.made >= self.osl) & (decoding | finished_prefill)
        handoff = finished_prefill if self.mode == MODE_PREFILL else np.zeros_like(done)
        outcome = StepOutcome(
            end_ns=end,
            first_token=self.ids[finished_prefill],
            completed=self.ids[done & ~handoff],
            prefilled=self.ids[handoff],
        )
        self._drop(done | handoff)
        return outcome

    def _decode_step(self, now_ns: int) -> StepOutcome:
        """``step`` where every sequence is past its prefill (most steps of a
        loaded replica): the same arithmetic with the prefill terms left out."""
        n_dec = int(self.ids.shape[0])
        end = self._end(now_ns, n_dec, float(self.ctx.mean()), 0, 0.0)
        k = self._tokens_this_step()
        self.ctx = self.ctx + k
        self.made = self.made + k
        done = self.made >= self.osl
        outcome = StepOutcome(end, _NONE, self.ids[done], _NONE)
        self._drop(done)
        return outcome

    def _end(
        self, now_ns: int, n_dec: int, ctx_dec: float, n_pre: int, ctx_pre: float
    ) -> int:
        dt = step_time_one(
            self.dep,
            self.eff,
            decode=float(n_dec * (1 + self.mtp_draft)),
            sequences=float(n_dec),
            context=ctx_dec,
            prefill=float(n_pre),
            prefill_context=ctx_pre,
        )
        return now_ns + max(1, int(dt * 1e9))

    def _drop(self, leave: BoolArray) -> None:
        """Free the KV reservations of the sequences that ``leave`` the batch."""
        if not leave.any():
            return
        self.kv_used -= int(self.reserve[leave].sum())
        keep = ~leave
        self.ids, self.ctx, self.todo, self.made, self.osl, self.reserve = (
            a[keep]
            for a in (self.ids, self.ctx, self.todo, self.made, self.osl, self.reserve)
        )
