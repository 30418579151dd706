"""Reruns never overwrite silently, run ids are unique, bad input is a usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infermeter.results.store import Store
from tests.cli_main import Result, run_main

QUICK = ("--sut", "null", "--benchmark", "resnet50", "--scenario", "Offline",
         "--min-duration", "100ms")  # fmt: skip


def quick_run(tmp: Path, folder: Path, *extra: str) -> Result:
    return run_main(
        "run", *QUICK, "--output-dir", str(folder), "--store", str(tmp / "s.db"), *extra
    )


def test_a_rerun_into_the_same_folder_is_refused_without_force(tmp_path: Path) -> None:
    folder = tmp_path / "my-run"
    first = quick_run(tmp_path, folder)
    assert first.code in (0, 3), first.output
    before = (folder / "run.json").read_text()
    again = quick_run(tmp_path, folder)
    assert again.code == 2
    assert again.stderr.strip().count("\n") == 0
    assert "already holds a run" in again.stderr and "--force" in again.stderr
    assert (folder / "run.json").read_text() == before  # untouched

    forced = quick_run(tmp_path, folder, "--force")
    assert forced.code in (0, 3), forced.output
    old_id = json.loads(before)["run_id"]
    new_id = json.loads((folder / "run.json").read_text())["run_id"]
    assert new_id != old_id
    with Store(tmp_path / "s.db") as store:
        # The replaced run's row went with it: one row for the folder.
        assert [r["run_id"] for r in store.runs()] == [new_id]


def test_runs_in_folders_of_the_same_name_are_both_kept(tmp_path: Path) -> None:
    for parent in ("A", "B"):
        result = quick_run(tmp_path, tmp_path / parent / "myrun")
        assert result.code in (0, 3), result.output
    with Store(tmp_path / "s.db") as store:
        rows = store.runs()
    assert len(rows) == 2
    assert len({r["run_id"] for r in rows}) == 2
    assert {Path(r["path"]).parent.name for r in rows} == {"A", "B"}


def test_two_old_folders_with_the_same_run_id_are_both_kept(tmp_path: Path) -> None:
    """Older run.json files used the folder name as id: the store tells them apart."""
    from tests.results_fixtures import write_run

    a = write_run(tmp_path / "A" / "myrun", run_id="myrun", seed=1)
    b = write_run(tmp_path / "B" / "myrun", run_id="myrun", seed=2)
    with Store(tmp_path / "s.db") as store:
        store.index_run(a)
        store.index_run(b)
        store.index_run(b)  # re-indexing is idempotent
        rows = store.runs()
    assert len(rows) == 2
    assert {r["path"] for r in rows} == {str(a.resolve()), str(b.resolve())}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--total-sample-count", "-3"), "--total-sample-count must be > 0"),
        (("--min-query-count", "-1"), "min_query_count must be >= 0"),
        (("--target-qps", "-1"), "--target-qps must be > 0"),
        (("--dataset", "missing.jsonl"), "not found"),
        (("--tokenizer", "missing.json"), "not found"),
        (("--user-conf", "missing.conf"), "Cannot open conf file"),
        (("--store", "/dev/null/x.db"), "results store"),
        (("--grace-period", "soon"), "--grace-period"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    result = run_main(
        "run", *QUICK, "--output-dir", str(tmp_path / "run"),
        *(() if "--store" in args else ("--store", str(tmp_path / "s.db"))), *args,
    )  # fmt: skip
    assert result.code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line
    assert says in line
    assert "internal error" not in result.output


@pytest.mark.parametrize("kind", ["file", "proc", "device"])
def test_an_output_dir_that_cannot_be_a_run_folder_is_exit_2(
    tmp_path: Path, kind: str
) -> None:
    target = {
        "file": tmp_path / "a-file.txt",
        "proc": Path("/proc/x"),
        "device": Path("/dev/null"),
    }[kind]
    if kind == "file":
        target.write_text("keep me")
    result = quick_run(tmp_path, target)
    assert result.code == 2, result.output
    assert result.stderr.strip().startswith("error: --output-dir")
    if kind == "file":
        assert target.read_text() == "keep me"


CHILD = """
import resource, sys
from infermeter.cli.main import main
sys.argv = ['infermeter', 'run', '--sut', 'fake', '--target-qps', '1e9',
            '--min-duration', '2s', '--output-dir', sys.argv[1], '--store', sys.argv[2]]
try:
    main()
finally:
    # VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec).
    status = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]
    use = resource.getrusage(resource.RUSAGE_SELF)
    print('USAGE', status, use.ru_utime + use.ru_stime, file=sys.stderr)
"""


def test_a_schedule_too_big_for_memory_is_refused_at_once(tmp_path: Path) -> None:
    """``--target-qps 1e9``: exit 2 before anything is allocated.

    Peak RSS shows nothing big was allocated; CPU time (not wall time, which a
    busy machine stretches) shows the refusal came at once, imports included.
    """
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "run"), str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    error = next(line for line in lines if line.startswith("error: "))
    assert "more than half of the" in error
    assert "--target-qps" in error and "--min-duration" in error
    peak_kib, cpu_s = int(lines[-1].split()[1]), float(lines[-1].split()[2])
    assert peak_kib < 500 * 1024  # the 15 GiB schedule was never allocated
    assert cpu_s < 2.0
    assert not (tmp_path / "run").exists()


def test_the_advice_of_the_memory_refusal_fits() -> None:
    from infermeter.errors import ConfigError
    from infermeter.loadgen.budget import check_phase_memory
    from infermeter.loadgen.settings import RunSettings, Scenario, effective_settings

    def check(qps: float, duration_ms: int) -> None:
        settings = RunSettings(
            scenario=Scenario.SERVER, server_target_qps=qps, min_duration_ms=duration_ms
        )
        check_phase_memory(
            effective_settings(
                settings, qsl_total_count=1024, qsl_performance_count=1024
            )
        )

    with pytest.raises(ConfigError) as refused:
        check(1e9, 2000)
    message = str(refused.value)
    rate = float(message.split("--target-qps ")[1].split()[0])
    seconds = float(message.split("--min-duration ")[1].split("s")[0])
    check(rate, 2000)
    check(1e9, int(seconds * 1000))
