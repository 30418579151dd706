"""Reading run folders: good ones, and the one-line errors for damaged ones."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.results_fixtures import write_run

from infermeter.errors import StoreError
from infermeter.results.runfolder import load_run


def test_reads_meta_and_records(tmp_path):
    run = load_run(write_run(tmp_path / "r", n=50, failures=2, seed=3))
    assert run.benchmark == "llama2-70b" and run.scenario == "Server"
    rec = run.records
    assert rec.scheduled_ns.dtype == np.int64 and len(rec.status) == 50
    assert rec.ok.sum() == 48 and rec.latency_ns().size == 48
    assert (rec.latency_ns() > 0).all()
    assert rec.tpot_ns().size == 48 and rec.status_reasons == (
        "HTTP 500: upstream error",
    )
    assert run.is_token_run


@pytest.mark.parametrize("victim", ["records.npz", "mlperf_log_summary.txt"])
def test_deleted_files_are_named(tmp_path, victim):
    folder = write_run(tmp_path / "r")
    (folder / victim).unlink()
    with pytest.raises(StoreError, match=f"missing {victim}") as info:
        load_run(folder)
    assert "\n" not in str(info.value)


def test_missing_folder_and_run_json(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match=r"is .* a run folder"):
        load_run(tmp_path / "empty")


def test_truncated_and_foreign_run_json(tmp_path):
    folder = write_run(tmp_path / "r")
    text = (folder / "run.json").read_text()
    (folder / "run.json").write_text(text[: len(text) // 2])
    with pytest.raises(StoreError, match="not valid JSON"):
        load_run(folder)
    (folder / "run.json").write_text(json.dumps({"hello": "world"}))
    with pytest.raises(StoreError, match=r"not an infermeter run\.json"):
        load_run(folder)


def test_future_schema_and_damaged_records(tmp_path):
    folder = write_run(tmp_path / "r")
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "schema_version": 7}))
    with pytest.raises(StoreError, match="schema_version 7"):
        load_run(folder)
    (folder / "run.json").write_text(json.dumps(meta))
    (folder / "records.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(StoreError, match="unreadable"):
        _ = load_run(folder).records
