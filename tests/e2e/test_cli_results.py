"""``infermeter results`` and ``infermeter compare`` through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.cli_main import Result, run_main
from tests.results_fixtures import write_run

V41_FILE = (
    Path(__file__).resolve().parents[2]
    / ".."
    / "shared/data/mlperf/summary_results_v4.1.json"
)


def _ok(args):
    result = run_main(*args)
    assert result.code == 0, result.output
    return result.output


def _error(result: Result, code: int, *words: str) -> None:
    """One ``error:`` line and ``code``: 2 for a ConfigError, 1 for any other
    InfermeterError (``main()`` maps them), never an internal error."""
    assert result.code == code, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    for word in words:
        assert word in result.stderr, result.stderr


def test_add_list_show_export_rm(tmp_path):
    store = str(tmp_path / "s.sqlite")
    run = write_run(tmp_path / "run", run_id="cli-run")
    assert "indexed cli-run" in _ok(["results", "add", str(run), "--store", store])
    listed = json.loads(_ok(["results", "list", "--store", store, "--json"]))
    assert [r["run_id"] for r in listed] == ["cli-run"]
    assert "cli-run" in _ok(["results", "list", "--store", store])
    shown = json.loads(_ok(["results", "show", "cli", "--store", store, "--json"]))
    assert shown["benchmark"] == "llama2-70b"
    for ext in ("csv", "json", "parquet"):
        target = tmp_path / f"runs.{ext}"
        _ok(["results", "export", str(target), "--store", store])
        assert target.stat().st_size > 0
    assert pq.read_table(tmp_path / "runs.parquet").column("run_id").to_pylist() == [
        "cli-run"
    ]
    assert "cli-run" in (tmp_path / "runs.csv").read_text()
    removed = json.loads(_ok(["results", "rm", "cli-run", "--store", store, "--json"]))
    assert removed == {"run_id": "cli-run"}
    assert json.loads(_ok(["results", "list", "--store", store, "--json"])) == []


def test_import_v41_and_compare_against_it(tmp_path):
    if not V41_FILE.is_file():
        pytest.skip("shared/data/mlperf/summary_results_v4.1.json is absent")
    store = str(tmp_path / "s.sqlite")
    imported = json.loads(
        _ok(["results", "import", str(V41_FILE), "--store", store, "--json"])
    )
    assert imported == {
        "imported": 937,
        "rounds": ["v4.1"],
        "store": store,
        "skipped": [],  # every v4.1 row has its count and its own key
    }
    rows = json.loads(
        _ok(
            [
                "results",
                "list",
                "--published",
                "--benchmark",
                "llama2-70b",
                "--scenario",
                "Offline",
                "--store",
                store,
                "--json",
            ]
        )
    )
    h100 = [
        r
        for r in rows
        if r["result_id"] == "v4.1-0043" and r["benchmark"].endswith("-99")
    ]
    assert h100[0]["value"] == 24524.9
    run = write_run(
        tmp_path / "run",
        scenario="Offline",
        gpu={"name": "H100 SXM", "count": 8},
        sut_kind="torch_llm",
    )
    result = json.loads(_ok(["compare", str(run), "--store", store, "--json"]))
    assert result["run"]["label"] == "unverified infermeter result"
    assert {r["round"] for r in result["rows"]} == {"v4.1"}
    assert all(r["division"] == "closed" for r in result["rows"])
    assert result["cost"]["gpu"] == "h100-sxm" and result["cost"]["derived"] is True
    text = " ".join(  # the console wraps at its width
        _ok(["compare", str(run), "--store", store, "--published", "v4.1-0043"]).split()
    )
    assert "result ID v4.1-0043" in text and "not verified by MLCommons" in text


def test_compare_uses_builtin_table_without_import(tmp_path):
    run = write_run(tmp_path / "run", scenario="Server")
    result = json.loads(
        _ok(["compare", str(run), "--store", str(tmp_path / "empty.sqlite"), "--json"])
    )
    assert result["rows"] and result["rows"][0]["source"].startswith("built-in table")
    assert result["cost"] is None  # no GPU known, no price


def test_bad_inputs_raise_the_right_errors(tmp_path):
    bad = tmp_path / "truncated.json"
    bad.write_text('[{"ID": "v4.1-0001"')
    store = str(tmp_path / "s.sqlite")
    _error(run_main("results", "import", str(bad), "--store", store), 2, "valid JSON")
    run = write_run(tmp_path / "run")
    (run / "records.npz").unlink()
    added = run_main("results", "add", str(run), "--store", store)
    _error(added, 1, "missing records.npz")  # a StoreError
    good = write_run(
        tmp_path / "good", gpu={"name": "h300", "count": 1}, sut_kind="torch_llm"
    )
    _error(run_main("compare", str(good), "--store", store), 2, "Unknown GPU 'h300'")


def test_console_script_prints_one_line_errors(tmp_path):
    bad = tmp_path / "foreign.json"
    bad.write_text('{"hello": 1}')
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infermeter",
            "results",
            "import",
            str(bad),
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "not an MLCommons summary_results.json" in proc.stderr
    # The console script once; the same mapping in-process (main()) for the rest.
    run = write_run(tmp_path / "run", gpu={"name": "h100-sxm", "count": 8})
    args = (
        "compare",
        str(run),
        "--currency",
        "XYZ",
        "--store",
        str(tmp_path / "s.sqlite"),
    )
    _error(run_main(*args), 2, "Unknown currency 'XYZ'")


def test_an_unwritable_output_path_is_one_line_with_exit_2(tmp_path):
    # report -o, results export and model calibrate --write ended in
    # "internal error: FileNotFoundError" for a path under a file.
    run = write_run(tmp_path / "run")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    store = str(tmp_path / "s.sqlite")
    _ok(["results", "add", str(run), "--store", store])
    for args in (
        ("report", str(run), "-o", str(blocked / "r.html")),
        ("results", "export", str(blocked / "rows.csv"), "--store", store),
    ):
        result = run_main(*args)
        assert result.code == 2, result.output
        assert "Cannot write" in result.stderr and "writable path" in result.stderr
        assert "internal error" not in result.stderr


def test_results_list_fits_80_columns_and_its_short_ids_are_found(tmp_path):
    import io

    from rich.console import Console

    from infermeter.cli.tables import print_table
    from infermeter.results import console as view
    from infermeter.results.store import Store

    store = str(tmp_path / "s.sqlite")
    run_id = "20261201T173603Z_llama2-70b_Server_9ce7ad"
    for name, rid in (("a", run_id), ("b", "my-own-name")):
        _ok(
            [
                "results",
                "add",
                str(write_run(tmp_path / name, run_id=rid)),
                "--store",
                store,
            ]
        )
    with Store(tmp_path / "s.sqlite") as db:
        rows = db.runs()
    out = io.StringIO()
    print_table(Console(file=out, width=80), view.runs_table(rows), wrap=view.RUN_WRAP)
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert "…" not in text and "9ce7ad" not in text
    assert "20261201T173603 " in text and "my-own-name" in text  # other ids whole
    shown = json.loads(
        _ok(["results", "show", "20261201T173603", "--store", store, "--json"])
    )
    assert shown["run_id"] == run_id
