"""Per-sample records in preallocated arrays, and the thread-safe sink that fills them.

One row per issued sample: issued and completed times (int ns, -1 = not yet)
and a status code, 17 bytes a sample; token runs add the first-token time
and n_tokens (12 more). No per-sample Python objects. The sink stamps times with the engine clock on
entry and reports misuse (unknown ids, double completion, a first token after
completion) as run errors instead of ignoring it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from infermeter.clock import Clock
from infermeter.loadgen.interfaces import IdArray, ResponseData, Stamps

UNSET = -1
STATUS_OK = 0
MAX_ERROR_KINDS = 32


def _pick(now: Stamps, mask: npt.NDArray[np.bool_]) -> Stamps:
    return now if isinstance(now, int) else np.asarray(now, dtype=np.int64)[mask]


def _latest(now: Stamps, clock: Clock) -> int:
    if isinstance(now, int):
        return now
    return int(now.max()) if now.shape[0] else clock.now_ns()


@dataclass(slots=True)
class Records:
    """Arrays indexed by sample id (the engine's sample sequence number)."""

    issued_ns: npt.NDArray[np.int64]
    first_token_ns: npt.NDArray[np.int64]
    completed_ns: npt.NDArray[np.int64]
    n_tokens: npt.NDArray[np.int32]
    status: npt.NDArray[np.uint8]
    status_reasons: list[str] = field(default_factory=list)

    @classmethod
    def allocate(cls, n_samples: int, *, tokens: bool = False) -> Records:
        """Arrays for ``n_samples``; the token columns only on token runs."""
        n_token = n_samples if tokens else 0
        return cls(
            issued_ns=np.full(n_samples, UNSET, dtype=np.int64),
            first_token_ns=np.full(n_token, UNSET, dtype=np.int64),
            completed_ns=np.full(n_samples, UNSET, dtype=np.int64),
            n_tokens=np.zeros(n_token, dtype=np.int32),
            status=np.zeros(n_samples, dtype=np.uint8),
        )

    @property
    def has_tokens(self) -> bool:
        return bool(self.n_tokens.shape[0] == self.completed_ns.shape[0])

    def tokens_of(self, n: int) -> npt.NDArray[np.int64]:
        """n_tokens of the first ``n`` samples (zeros on non-token runs)."""
        if self.has_tokens:
            return self.n_tokens[:n].astype(np.int64)
        return np.zeros(n, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return int(
            self.issued_ns.nbytes
            + self.first_token_ns.nbytes
            + self.completed_ns.nbytes
            + self.n_tokens.nbytes
            + self.status.nbytes
        )


class _EmptyData(Sequence[bytes]):
    """Stands in for ``data`` when a SUT completes without any."""

    def __getitem__(self, index: object) -> bytes:  # type: ignore[override]
        return b""

    def __len__(self) -> int:
        return 0


class Sink:
    """The engine's CompletionSink: thread-safe, array-at-a-time."""

    def __init__(
        self,
        records: Records,
        clock: Clock,
        *,
        log_mask: npt.NDArray[np.bool_] | None = None,
        keep_first_token_data: bool = False,
    ) -> None:
        self._records = records
        self._clock = clock
        self._lock = threading.Lock()
        self._log_mask = log_mask  # None: nothing goes to the accuracy log
        self._keep_token_data = keep_first_token_data
        self.issued = 0  # samples issued so far (written by the issue thread)
        self.done = 0  # samples completed or failed
        self.last_progress_ns = clock.now_ns()
        self._wake_at = 1 << 62
        self.wake = threading.Event()
        # Set to wake the issue loop early: by ``abort``, or by a stop signal.
        self.interrupt = threading.Event()
        self.aborted = False  # ``abort`` was called: the phase ends now
        self.errors: Counter[str] = Counter()
        self.response_data: dict[int, bytes] = {}
        self.token_data: dict[int, bytes] = {}
        self._sealed = False

    @property
    def lock(self) -> threading.Lock:
        """Held while a call writes records; readers (the journal) take it too."""
        return self._lock

    def seal(self) -> None:
        """The phase is over: later calls change nothing (they are not errors)."""
        with self._lock:
            self._sealed = True

    # -- waiting -------------------------------------------------------------------
    def arm(self, threshold: int) -> bool:
        """Ask to be woken when ``done >= threshold``; True if it already is."""
        with self._lock:
            if self.done >= threshold:
                return True
            self._wake_at = threshold
            if not self.aborted:
                self.wake.clear()
            return False

    def abort(self, reason: str) -> None:
        """End the phase now with ``reason`` as a run error (the run is INVALID).

        For a SUT that can no longer answer (a client process or actor died):
        the issue loop stops at once instead of waiting out the completion timeout.
        """
        with self._lock:
            self._error(reason, 1)
            self.aborted = True
            self.interrupt.set()
            self.wake.set()

    def mark_issued(self, ids: IdArray, at_ns: Stamps) -> None:
        """When a SUT that takes queries ahead of time (remote clients) really issued
        ``ids``: replaces the engine's hand-over stamp, so lateness is the sender's."""
        ids = np.asarray(ids, dtype=np.int64)
        with self._lock:
            if self._sealed:  # sent after the phase ended (a stop): not its record
                return
            mask = (ids >= 0) & (ids < self.issued)
            self._records.issued_ns[ids[mask]] = _pick(at_ns, mask)

    # -- CompletionSink ------------------------------------------------------------
    def first_token(
        self,
        ids: IdArray,
        data: Sequence[ResponseData] | None = None,
        *,
        at_ns: Stamps | None = None,
    ) -> None:
        now = self._clock.now_ns() if at_ns is None else at_ns
        ids = np.asarray(ids, dtype=np.int64)
        rec = self._records
        with self._lock:
            mask = self._accept(ids, "first token", completed_is_error=False)
            if not rec.has_tokens:  # LoadGen ignores first tokens on non-token runs
                return
            late = rec.completed_ns[ids[mask]] != UNSET
            if late.any():
                self._error(
                    "a first token arrived after its sample completed", int(late.sum())
                )
                mask[np.nonzero(mask)[0][late]] = False
            fresh = rec.first_token_ns[ids[mask]] == UNSET
            mask[np.nonzero(mask)[0][~fresh]] = False
            rec.first_token_ns[ids[mask]] = _pick(now, mask)
            if (
                data is not None
                and self._keep_token_data
                and self._log_mask is not None
            ):
                self._keep(ids, mask, data, self.token_data)

    def complete(
        self,
        ids: IdArray,
        *,
        n_tokens: npt.NDArray[np.int64] | int | None = None,
        data: Sequence[ResponseData] | None = None,
        at_ns: Stamps | None = None,
    ) -> None:
        """Complete ``ids``; ``at_ns`` (int or one per id, this sink's clock) are
        times an adapter took on its own entry, so it can hand over many calls at once."""
        now = self._clock.now_ns() if at_ns is None else at_ns
        ids = np.asarray(ids, dtype=np.int64)
        rec = self._records
        with self._lock:
            mask = self._accept(ids, "completion")
            chosen = ids[mask]
            rec.completed_ns[chosen] = _pick(now, mask)
            if n_tokens is not None and rec.has_tokens:
                if isinstance(n_tokens, int):
                    rec.n_tokens[chosen] = n_tokens
                else:
                    rec.n_tokens[chosen] = np.asarray(n_tokens)[mask]
            if self._log_mask is not None:
                # A response without data is logged with empty data, as LoadGen does.
                self._keep(ids, mask, data or _EmptyData(), self.response_data)
            self._progress(int(chosen.shape[0]), _latest(now, self._clock))

    def fail(self, ids: IdArray, reason: str) -> None:
        now = self._clock.now_ns()
        ids = np.asarray(ids, dtype=np.int64)
        rec = self._records
        with self._lock:
            chosen = ids[self._accept(ids, "failure")]
            rec.completed_ns[chosen] = now
            rec.status[chosen] = self._reason_code(reason)
            self._progress(int(chosen.shape[0]), now)

    def wants_data(self, ids: IdArray) -> npt.NDArray[np.bool_]:
        if self._log_mask is None:
            return np.zeros(np.asarray(ids).shape[0], dtype=np.bool_)
        return self._log_mask[np.asarray(ids, dtype=np.int64)]

    # -- internals -----------------------------------------------------------------
    def _accept(
        self, ids: IdArray, what: str, *, completed_is_error: bool = True
    ) -> npt.NDArray[np.bool_]:
        """Mask of the ids to act on; misuse is counted as a run error."""
        if self._sealed:
            return np.zeros(ids.shape[0], dtype=np.bool_)
        mask = (ids >= 0) & (ids < self.issued)
        if not mask.all():
            self._error(f"{what} for an id that was never issued", int((~mask).sum()))
        if completed_is_error:
            done = np.zeros_like(mask)
            done[mask] = self._records.completed_ns[ids[mask]] != UNSET
            if done.any():
                self._error("a sample was completed twice", int(done.sum()))
                mask &= ~done
        # Strictly increasing ids (the usual batch) cannot repeat; skip the sort.
        if ids.shape[0] > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            chosen = np.nonzero(mask)[0]
            _, first = np.unique(ids[chosen], return_index=True)
            if first.shape[0] != chosen.shape[0]:
                self._error(f"the same id twice in one {what} call", 1)
                mask[:] = False
                mask[chosen[first]] = True
        return mask

    def _keep(
        self,
        ids: IdArray,
        mask: npt.NDArray[np.bool_],
        data: Sequence[ResponseData],
        into: dict[int, bytes],
    ) -> None:
        assert self._log_mask is not None
        positions = np.nonzero(mask)[0]
        wanted = positions[self._log_mask[ids[positions]]]
        for k in wanted.tolist():
            into[int(ids[k])] = bytes(data[k])

    def _progress(self, n: int, now: int) -> None:
        self.done += n
        self.last_progress_ns = now
        if self.done >= self._wake_at:
            self.wake.set()

    def _reason_code(self, reason: str) -> int:
        reasons = self._records.status_reasons
        if reason not in reasons:
            if len(reasons) >= 254:
                reason = "other failure"
                if reason in reasons:
                    return reasons.index(reason) + 1
            reasons.append(reason)
        return reasons.index(reason) + 1

    def _error(self, message: str, count: int) -> None:
        if message in self.errors or len(self.errors) < MAX_ERROR_KINDS:
            self.errors[message] += count
