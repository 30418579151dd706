"""The SQLite results store: runs, published rows, migrations, transactions."""

from __future__ import annotations

import sqlite3

import pytest
from tests.results_fixtures import write_run

from infermeter.errors import StoreError
from infermeter.results import schema
from infermeter.results.published import parse_summary
from infermeter.results.store import Store, default_store_path


def _published(n=3):
    rows = [
        {
            "ID": f"v4.1-00{i:02d}",
            "Category": "closed",
            "Availability": "available",
            "Model": "llama2-70b-99",
            "Scenario": "Offline",
            "Accelerator": "NVIDIA H100-SXM-80GB",
            "a#": 8.0,
            "Nodes": 1,
            "version": "v4.1",
            "Performance_Result": 1000.0 * (i + 1),
            "Performance_Units": "Tokens/s",
        }
        for i in range(n)
    ]
    return parse_summary(rows, source="test.json", retrieved_at="2026-11-26")


def test_default_path_honours_infermeter_home_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("INFERMETER_HOME", str(tmp_path / "home"))
    assert default_store_path() == tmp_path / "home" / "store.sqlite"
    monkeypatch.delenv("INFERMETER_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_path() == tmp_path / "xdg" / "infermeter" / "store.sqlite"


def test_index_list_show_and_remove_a_run(tmp_path):
    run = write_run(tmp_path / "run1", run_id="run-one", seed=1)
    with Store(tmp_path / "s.sqlite") as store:
        row = store.index_run(run)
        assert row["benchmark"] == "llama2-70b" and row["verdict"] == "VALID"
        store.index_run(run)  # re-indexing replaces, never duplicates
        (listed,) = store.runs()
        assert listed["run_id"] == "run-one"
        assert listed["tokens_per_second"] == pytest.approx(row["tokens_per_second"])
        assert listed["host"] == "testhost"
        assert store.run("run-o")["path"] == str(run.resolve())
        assert store.remove_run("run-one") == "run-one"
        assert store.runs() == []
        with pytest.raises(StoreError, match="No run 'run-one'"):
            store.run("run-one")


def test_ambiguous_prefix_is_an_error(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        for name in ("abc-1", "abc-2"):
            store.index_run(write_run(tmp_path / name, run_id=name))
        with pytest.raises(StoreError, match="ambiguous"):
            store.run("abc")


def test_published_rows_round_trip(tmp_path):
    rows = _published()
    with Store(tmp_path / "s.sqlite") as store:
        assert store.add_published(rows, source="test.json") == 3
        back = store.published(benchmark="llama2-70b", scenario="Offline")
        assert back == rows
        assert store.imports()[0]["row_count"] == 3
        assert store.remove_published("v4.1") == 3


def test_failure_mid_import_leaves_the_store_as_before(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        store.add_published(_published(1), source="first")

        def broken():
            yield from _published(3)
            raise RuntimeError("disk full")

        with pytest.raises(RuntimeError):
            store.add_published(broken(), source="second")
        assert len(store.published()) == 1
        assert [i["source"] for i in store.imports()] == ["first"]


def test_a_v1_store_still_opens_and_is_migrated(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.migrate(conn, target=1) == 1
    conn.execute(
        "INSERT INTO runs (run_id, path, benchmark, scenario, indexed_at) "
        "VALUES ('old-run', '/x', 'resnet', 'Offline', '2025-01-01')"
    )
    conn.close()
    with Store(path) as store:
        assert store.version == schema.LATEST == 2
        (row,) = store.runs()
        assert row["run_id"] == "old-run" and row["host"] is None
        store.add_published(_published(1), source="after-migration")
        assert store.imports()[0]["source"] == "after-migration"


def test_a_newer_store_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StoreError, match="newer than this infermeter"):
        Store(path)


def test_a_file_that_is_not_sqlite_is_one_line(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="Cannot open the results store"):
        Store(path)
