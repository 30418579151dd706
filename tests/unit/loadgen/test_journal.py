"""The records journal holds every completed sample, and survives being cut short."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from infermeter.clock import MonotonicClock
from infermeter.loadgen.journal import MAGIC, RecordJournal, read_journal
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import RunSettings, Scenario
from infermeter.loadgen.stop import StopSignal
from infermeter.suts.fake import FakeSUT
from infermeter.testing import InMemoryQSL, ManualClock

MS = 1_000_000


def _expected(outcome: object) -> dict[str, np.ndarray]:
    phase = outcome.performance  # type: ignore[attr-defined]
    n = phase.samples_issued
    rec = phase.records
    done = rec.completed_ns[:n] != -1
    query = phase.schedule.query_of_samples()[:n]
    return {
        "completed_ns": (rec.completed_ns[:n] - phase.start_ns)[done],
        "issued_ns": (rec.issued_ns[:n] - phase.start_ns)[done],
        "scheduled_ns": (phase.query_origin_ns[query] - phase.start_ns)[done],
        "sample_index": phase.schedule.sample_indices[:n][done],
        "query_index": query[done],
    }


@pytest.mark.parametrize(
    ("scenario", "tokens"),
    [(Scenario.SERVER, False), (Scenario.SERVER, True), (Scenario.MULTI_STREAM, False)],
)
def test_the_journal_holds_the_same_rows_as_the_records(
    tmp_path: Path, scenario: Scenario, tokens: bool
) -> None:
    clock = ManualClock(start_ns=0)
    settings = RunSettings(
        scenario=scenario,
        min_duration_ms=2000,
        min_query_count=50,
        server_target_qps=200.0,
        multi_stream_expected_latency_ns=5 * MS,
        use_token_latencies=tokens,
    )
    journal = RecordJournal(tmp_path / "records.journal")
    sut = FakeSUT(
        clock, latency_ns=20 * MS, token_run=tokens, output_tokens=8, ttft_ns=5 * MS
    )
    outcome = run_test(sut, InMemoryQSL(32), settings, clock=clock, watcher=journal)
    journal.close()
    rows = read_journal(tmp_path / "records.journal")
    for name, values in _expected(outcome).items():
        np.testing.assert_array_equal(rows[name], values, err_msg=name)
    assert rows["completed_ns"].shape[0] == journal.rows_written > 0
    if tokens:
        assert (rows["n_tokens"] == 8).all()
        assert (rows["first_token_ns"] >= 0).all()


def test_a_frame_cut_short_is_ignored(tmp_path: Path) -> None:
    clock = ManualClock(start_ns=0)
    settings = RunSettings(
        scenario=Scenario.SERVER, min_duration_ms=1000, server_target_qps=100.0
    )
    path = tmp_path / "records.journal"
    journal = RecordJournal(path)
    run_test(
        FakeSUT(clock, latency_ns=MS),
        InMemoryQSL(8),
        settings,
        clock=clock,
        watcher=journal,
    )
    journal.close()
    whole = read_journal(path)
    data = path.read_bytes()
    # A kill in the middle of a frame: its header, then only part of its data.
    header = data[len(MAGIC) : data.index(b"\n", len(MAGIC)) + 1]
    path.write_bytes(data + header + b"\x00" * 5)
    cut = read_journal(path)
    np.testing.assert_array_equal(cut["completed_ns"], whole["completed_ns"])
    path.write_bytes(data[: len(MAGIC) + 3])
    assert read_journal(path)["completed_ns"].shape == (0,)


def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.journal"
    path.write_bytes(b"\x80\x04 not a journal")
    with pytest.raises(ValueError, match="not an infermeter records journal"):
        read_journal(path)


def test_rows_reach_the_file_while_the_run_is_still_going(tmp_path: Path) -> None:
    """Real time: the file grows within the flush interval, before the run ends."""
    path = tmp_path / "records.journal"
    clock = MonotonicClock()
    stop = StopSignal(grace_ns=5_000 * MS)
    journal = RecordJournal(path, flush_s=0.05)
    seen: list[int] = []

    def watch() -> None:
        # Wait for rows on disk, then end the run: the rows came before the end.
        try:
            for _ in range(3000):
                if path.exists() and read_journal(path)["completed_ns"].size:
                    seen.append(int(read_journal(path)["completed_ns"].size))
                    return
                stop.event.wait(0.01)
        finally:
            stop.stop("test")

    watcher = threading.Thread(target=watch)
    watcher.start()
    settings = RunSettings(
        scenario=Scenario.SERVER, min_duration_ms=600_000, server_target_qps=200.0
    )
    run_test(
        FakeSUT(clock, latency_ns=MS),
        InMemoryQSL(8),
        settings,
        clock=clock,
        watcher=journal,
        stop=stop,
    )
    watcher.join()
    journal.close()
    assert seen and seen[0] > 0
