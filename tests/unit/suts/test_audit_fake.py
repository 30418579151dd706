"""The audit fake SUT: one worker in virtual time, answers by sample index, and its cheats."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import QueryBatch
from infermeter.loadgen.settings import Mode
from infermeter.suts.audit_fake import AuditFakeSUT
from infermeter.testing import ManualClock, RecordingSink

MS = 1_000_000


def batch(indices: list[int], first_id: int = 0) -> QueryBatch:
    n = len(indices)
    return QueryBatch(
        np.arange(first_id, first_id + n, dtype=np.int64),
        np.asarray(indices, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
    )


def serve(sut: AuditFakeSUT, clock: ManualClock, indices: list[int]) -> RecordingSink:
    sink = RecordingSink()
    sut.issue_query(batch(indices), sink)
    clock.advance(10_000 * MS)
    return sink


def test_samples_are_served_one_after_another() -> None:
    clock = ManualClock()
    stamps: dict[int, int] = {}
    sink = RecordingSink()
    original = sink.complete

    def complete(ids, **kw):  # type: ignore[no-untyped-def]
        for i in np.asarray(ids).tolist():
            stamps[i] = clock.now_ns()
        original(ids, **kw)

    sink.complete = complete  # type: ignore[method-assign]
    start = clock.now_ns()
    AuditFakeSUT(clock, latency_ns=2 * MS).issue_query(batch([5, 6, 7]), sink)
    clock.advance(100 * MS)
    assert {i: t - start for i, t in stamps.items()} == {
        0: 2 * MS,
        1: 4 * MS,
        2: 6 * MS,
    }


def test_answers_depend_only_on_the_sample_index() -> None:
    clock = ManualClock()
    a = serve(AuditFakeSUT(clock, mode=Mode.ACCURACY_ONLY), clock, [3, 9, 3])
    assert a.completed[0] == a.completed[2] != a.completed[1]
    value = np.frombuffer(a.completed[0][1] or b"", np.int32)
    assert value[0] == 3


def test_tokens_end_with_one_eos_and_match_the_count_and_first_token() -> None:
    clock = ManualClock()
    sink = serve(AuditFakeSUT(clock, token_run=True, eos_id=2), clock, [0, 1, 2, 3])
    for sample_id, (count, data) in sink.completed.items():
        tokens = np.frombuffer(data or b"", np.int32)
        assert count == len(tokens) == 8 + sample_id % 4
        assert tokens[-1] == 2 and 2 not in tokens[:-1]
        assert (
            np.frombuffer(sink.first_tokens[sample_id] or b"", np.int32)[0] == tokens[0]
        )


def test_cheats_break_their_rule() -> None:
    clock = ManualClock()
    honest = serve(AuditFakeSUT(clock, mode=Mode.PERFORMANCE_ONLY), clock, [4])
    cheat = serve(
        AuditFakeSUT(clock, mode=Mode.PERFORMANCE_ONLY, cheat="perf-mode"), clock, [4]
    )
    assert honest.completed[0] != cheat.completed[0]
    first = serve(AuditFakeSUT(clock, token_run=True, cheat="first-token"), clock, [4])
    data = np.frombuffer(first.completed[0][1] or b"", np.int32)
    assert np.frombuffer(first.first_tokens[0] or b"", np.int32)[0] != data[0]
    eos = serve(AuditFakeSUT(clock, token_run=True, cheat="eos"), clock, [4])
    assert np.frombuffer(eos.completed[0][1] or b"", np.int32)[-3:].tolist() == [
        2,
        2,
        2,
    ]
    count = serve(AuditFakeSUT(clock, token_run=True, cheat="token-count"), clock, [4])
    n, raw = count.completed[0]
    assert n == len(np.frombuffer(raw or b"", np.int32)) + 1


def test_the_cache_cheat_speeds_up_a_repeated_sample_only() -> None:
    sut = AuditFakeSUT(ManualClock(), latency_ns=MS, cheat="cache", cache_speedup=100)
    assert [sut._cost(i) for i in (1, 1, 1, 2, 1)] == [MS, MS // 100, MS // 100, MS, MS]


def test_fast_samples_complete_in_groups() -> None:
    clock = ManualClock()
    calls: list[int] = []
    sink = RecordingSink()
    original = sink.complete

    def complete(ids, **kw):  # type: ignore[no-untyped-def]
        calls.append(len(ids))
        original(ids, **kw)

    sink.complete = complete  # type: ignore[method-assign]
    AuditFakeSUT(clock, latency_ns=MS // 20).issue_query(batch(list(range(100))), sink)
    clock.advance(100 * MS)
    assert sum(calls) == 100 and len(calls) == 10  # 0.5 ms of samples per group


def test_an_unknown_cheat_is_named() -> None:
    with pytest.raises(ConfigError, match="Known: none, cache"):
        AuditFakeSUT(ManualClock(), cheat="bribe")
