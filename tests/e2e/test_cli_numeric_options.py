"""Every number option of every command, given a value no option takes, is refused in
one line with exit 2 before anything runs: never an internal error, a server that
starts or load that is sent.

The servers run in this process with their socket's bind replaced by a trap: one
that accepted the number reaches the bind and is caught there ("it started
serving") instead of serving; ``run`` and ``sweep`` point at a closed port, so one
that accepted the number fails its preflight (exit 1) instead of sending load.

The options are read from each command's ``--help`` (an option shown as ``<int>`` or
``<float>``), so an option added later is covered without editing this test. -2 is
below every option's range (``--prefix-cache-tokens`` takes -1: the whole cache); every
float option also refuses ``inf`` and ``nan`` (``cli/main.py`` checks them all).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_main import Result, run_main
from tests.no_serving import Served, trap_binds
from tests.results_fixtures import write_run

NUMBER = re.compile(
    r"(--[a-z][a-z0-9-]+)\s+(?:-[a-zA-Z]\s+)?<(?:int|float)(?: range)?>"
)
FLOAT = re.compile(r"(--[a-z][a-z0-9-]+)\s+(?:-[a-zA-Z]\s+)?<float(?: range)?>")
CLOSED = ["--sut", "openai", "--url", "http://127.0.0.1:9/v1", "--model", "m"]
SERVERS = ("serve-mock", "serve-sim")
COMMANDS = (
    "accuracy", "compare", "diff", "plan", "report", "run", "serve-mock",
    "serve-sim", "sweep", "model predict", "model calibrate", "results list",
    "results export", "agentic run", "agentic synth",
)  # fmt: skip


def _number_options(command: str, pattern: re.Pattern[str] = NUMBER) -> list[str]:
    return sorted(set(pattern.findall(_help(command))))


@functools.cache
def _help(command: str) -> str:
    """The command's ``--help``, wide enough that no option's type wraps (read
    once: both checks of a command read it)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("COLUMNS", "250")
        env.setenv("NO_COLOR", "1")
        result = run_main(*command.split(), "--help")
    assert result.code == 0, result.output
    return result.stdout


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
        "run": ["--output-dir", str(tmp_path / "out"), *CLOSED],
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
        "agentic run": [
            "--url", "http://127.0.0.1:9/v1", "--model", "m", "--synthetic", "2",
            "--output-dir", str(tmp_path / "agentic"),
        ],
        "agentic synth": [str(tmp_path / "syn.jsonl")],
    }  # fmt: skip


def _llm_row() -> dict[str, object]:
    return {
        "ID": "5.1-0001", "version": "v5.1", "Submitter": "X", "Category": "closed",
        "Suite": "datacenter", "System": "box", "Model": "llama2-70b-99",
        "Scenario": "Offline", "Accelerator": "NVIDIA H100-SXM-80GB", "a#": 8.0,
        "Software": "TensorRT", "Performance_Result": 20000.0,
        "Performance_Units": "Tokens/s",
    }  # fmt: skip


@pytest.fixture(autouse=True)
def _no_serving(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    trap_binds(monkeypatch)
    yield


def _invoke(command: str, args: list[str]) -> Result:
    """The console script's exit code and output (a server that would serve is caught)."""
    try:
        return run_main(*command.split(), *args)
    except Served:
        return Result(0, "", "it started serving: the number was accepted")


@pytest.mark.parametrize("server", SERVERS)
def test_a_server_given_good_numbers_reaches_the_trap(server: str) -> None:
    # Else a server that binds some other way would serve here, or pass unseen.
    result = _invoke(server, ["--port", "0"])
    assert "it started serving" in result.stderr, result.output


def test_the_help_lists_number_options_to_check() -> None:
    # The regex reads the help; if its layout changed, the sweep below checks nothing.
    assert len(_number_options("sweep")) >= 10
    assert "--users" in _number_options("plan")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_number_below_every_range_is_one_line_with_exit_2(
    command: str, world: dict[str, list[str]]
) -> None:
    _refused(command, [(option, "-2") for option in _number_options(command)], world)


@pytest.mark.parametrize("command", COMMANDS)
def test_inf_and_nan_are_refused_by_every_float_option(
    command: str, world: dict[str, list[str]]
) -> None:
    # Python reads "inf" and "nan" as floats: infinite rates, durations and
    # bounds reached the code (an internal OverflowError in run, servers that
    # started, a plan computed with an infinite TTFT).
    options = _number_options(command, FLOAT)
    _refused(command, [(o, v) for o in options for v in ("inf", "nan")], world)


def _refused(
    command: str, cases: list[tuple[str, str]], world: dict[str, list[str]]
) -> None:
    """Each (option, value) of ``cases`` ends in exit 2 with one line (or click's
    usage box) before anything runs."""

    def check(case: tuple[str, str]) -> Result:
        return _invoke(command, [*world[command], *case])

    # In-process, on the main thread (``run`` installs signal handlers).
    results = [check(case) for case in cases]
    failures = []
    for (option, value), result in zip(cases, results, strict=True):
        lines = [x for x in result.stderr.strip().splitlines() if x.strip()]
        usage_box = "Invalid value for" in result.stderr  # click's own range check
        said = f"{option} {value}"
        if result.code != 2 or "internal error" in result.stderr:
            failures.append(f"{said}: exit {result.code}: {result.stderr[-300:]}")
        elif not usage_box and len(lines) != 1:
            failures.append(f"{said}: not one line: {result.stderr[-300:]}")
    assert not failures, "\n".join(failures)
