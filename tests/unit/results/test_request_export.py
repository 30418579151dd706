"""``results export RUN --requests``: every sample's times, tokens and status."""

from __future__ import annotations

import csv
import json
import sys

import numpy as np
import pytest
from tests.cli_main import run_main
from tests.results_fixtures import write_run

from infermeter.results.request_export import COLUMNS
from infermeter.results.runfolder import load_run


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_jsonl_has_a_row_per_sample_with_the_records_times(tmp_path, monkeypatch):
    run = write_run(tmp_path / "run", run_id="r1", n=40, failures=3, seed=2)
    monkeypatch.chdir(tmp_path)
    result = run_main("results", "export", str(run), "--requests")
    assert result.code == 0, result.output
    assert "wrote 40 samples of r1 to r1-requests.jsonl" in result.stdout
    rows = _rows(tmp_path / "r1-requests.jsonl")
    rec = load_run(run).records
    assert len(rows) == 40 and list(rows[0]) == list(COLUMNS)
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 3
    assert {r["reason"] for r in failed} == {"HTTP 500: upstream error"}
    assert all(r["latency_ms"] is None and r["ttft_ms"] is None for r in failed)
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 37 and all(r["reason"] == "" for r in ok)
    # The same figures the run's own metrics come from, in ms.
    np.testing.assert_allclose(
        sorted(r["latency_ms"] for r in ok), np.sort(rec.latency_ns()) / 1e6
    )
    np.testing.assert_allclose(
        sorted(r["ttft_ms"] for r in ok), np.sort(rec.ttft_ns()) / 1e6
    )
    np.testing.assert_allclose(
        sorted(r["tpot_ms"] for r in ok), np.sort(rec.tpot_ns()) / 1e6, atol=1e-6
    )
    last = rows[-1]
    assert last["scheduled_ms"] <= last["issued_ms"] <= last["first_token_ms"]
    assert last["first_token_ms"] <= last["completed_ms"]
    assert last["output_tokens"] == int(rec.n_tokens[-1])


def test_csv_and_parquet_from_a_store_id(tmp_path):
    import pyarrow.parquet as pq

    store = str(tmp_path / "s.sqlite")
    run = write_run(tmp_path / "run", run_id="store-run", n=25, failures=2)
    assert run_main("results", "add", str(run), "--store", store).code == 0
    csv_out, pq_out = tmp_path / "o.csv", tmp_path / "o.parquet"
    for out in (csv_out, pq_out):
        args = ("results", "export", "store", "--requests", "--out", str(out))
        result = run_main(*args, "--store", store)
        assert result.code == 0, result.output
    with csv_out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 25 and rows[0]["latency_ms"] == ""  # failed: no latency
    assert rows[-1]["status"] == "ok" and float(rows[-1]["latency_ms"]) > 0
    table = pq.read_table(pq_out)
    assert table.column_names == list(COLUMNS) and table.num_rows == 25
    assert table.column("ttft_ms").null_count == 2


def test_a_sample_never_completed_is_said_so(tmp_path):
    run = write_run(tmp_path / "run", n=5)
    with np.load(run / "records.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["completed_ns"][4] = -1
    np.savez(run / "records.npz", **arrays)
    out = tmp_path / "o.jsonl"
    assert (
        run_main("results", "export", str(run), "--requests", "--out", str(out)).code
        == 0
    )
    last = _rows(out)[-1]
    assert last["status"] == "not completed" and last["completed_ms"] is None


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    run = write_run(tmp_path / "run", n=5)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    out = tmp_path / "o.parquet"
    result = run_main("results", "export", str(run), "--requests", "--out", str(out))
    assert result.code != 0 and "infermeter[parquet]" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--requests", "--format", "json"), "pass --format jsonl|csv|parquet"),
        (("--out", "x.csv"), "--out goes with --requests"),
    ],
)
def test_bad_options_are_one_line(tmp_path, args, words):
    run = write_run(tmp_path / "run", n=5)
    result = run_main("results", "export", str(run), *args)
    assert result.code == 2 and words in result.stderr
    assert "Traceback" not in result.output
