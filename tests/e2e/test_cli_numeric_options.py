"""Every number option of every command, given a value no option takes, is refused in
one line with exit 2 before anything runs: never an internal error, a server that
starts or load that is sent.

The options are read from each command's ``--help`` (an option shown as ``<int>`` or
``<float>``), so an option added later is covered without editing this test. -2 is
below every option's range (``--prefix-cache-tokens`` takes -1: the whole cache).
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app
from tests.cli_main import run_main
from tests.results_fixtures import write_run

NUMBER = re.compile(
    r"(--[a-z][a-z0-9-]+)\s+(?:-[a-zA-Z]\s+)?<(?:int|float)(?: range)?>"
)
COMMANDS = (
    "accuracy", "compare", "diff", "plan", "report", "run", "serve-mock",
    "serve-sim", "sweep", "model predict", "model calibrate", "results list",
    "results export",
)  # fmt: skip


def _number_options(command: str) -> list[str]:
    result = CliRunner().invoke(
        app, [*command.split(), "--help"], env={"COLUMNS": "250", "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    return sorted(set(NUMBER.findall(result.output)))


@pytest.fixture
def world(tmp_path: Path) -> dict[str, list[str]]:
    """The other arguments each command needs, pointing at real files."""
    run = str(write_run(tmp_path / "run"))
    results = tmp_path / "summary.json"
    results.write_text(json.dumps([_llm_row()]))
    store = ["--store", str(tmp_path / "s.sqlite")]
    return {
        "accuracy": [run],
        "compare": [run],
        "diff": [run, run],
        "plan": [],
        "report": [run, "-o", str(tmp_path / "r.html")],
        "run": ["--output-dir", str(tmp_path / "out")],
        "serve-mock": ["--port", "0"],
        "serve-sim": ["--port", "0"],
        "sweep": [
            "--url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--concurrency",
            "1",
        ],
        "model predict": ["--results", str(results)],
        "model calibrate": ["--results", str(results)],
        "results list": store,
        "results export": [str(tmp_path / "rows.csv"), *store],
    }


def _llm_row() -> dict[str, object]:
    return {
        "ID": "5.1-0001", "version": "v5.1", "Submitter": "X", "Category": "closed",
        "Suite": "datacenter", "System": "box", "Model": "llama2-70b-99",
        "Scenario": "Offline", "Accelerator": "NVIDIA H100-SXM-80GB", "a#": 8.0,
        "Software": "TensorRT", "Performance_Result": 20000.0,
        "Performance_Units": "Tokens/s",
    }  # fmt: skip


@pytest.fixture
def deadline() -> Iterator[None]:
    """A command that accepted the number and started serving or sending load would
    block: 30 s ends it with an error the assertions below report."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError("the command ran: the number was accepted")

    old = signal.signal(signal.SIGALRM, expire)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_the_help_lists_number_options_to_check() -> None:
    # The regex reads the help; if its layout changed, the sweep below checks nothing.
    assert len(_number_options("sweep")) >= 10
    assert "--users" in _number_options("plan")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_number_below_every_range_is_one_line_with_exit_2(
    command: str, world: dict[str, list[str]], deadline: None
) -> None:
    failures = []
    for option in _number_options(command):
        signal.alarm(30)
        result = run_main(*command.split(), *world[command], option, "-2")
        signal.alarm(0)
        lines = [x for x in result.stderr.strip().splitlines() if x.strip()]
        usage_box = "Invalid value for" in result.stderr  # click's own range check
        if result.code != 2 or "internal error" in result.stderr:
            failures.append(f"{option} -2: exit {result.code}: {result.stderr[-300:]}")
        elif not usage_box and len(lines) != 1:
            failures.append(f"{option} -2: not one line: {result.stderr[-300:]}")
    assert not failures, "\n".join(failures)
