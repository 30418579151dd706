"""Every example in README.md and in each command's --help runs, and ends as its text says.

Examples are found, not listed: the ``infermeter ...`` lines of README.md's
code blocks (``\\`` continuations joined) and inline code spans, and of every
command's help text. An example says more in its trailing ``# comment``:

* ``(tests: FLAGS)``: the test runs it with these flags (a flag already on
  the line gets the new value). This is how an example declares that it is
  shortened in tests, e.g. ``# MLPerf's 10-minute minimum (tests: --min-duration 2s)``.
* ``exit N``: it ends with exit code N (default 0), e.g. ``# ends INVALID: exit 3``.
* ``|| ...`` after the command (shell): any exit code but an error (1, 2).
* a ``serve-mock`` / ``serve-sim`` example is a server: the test starts it
  (on a free port), waits until ``/v1/models`` answers, and stops it.

Each example runs in a fresh copy of a world (``examples_world.py``) that
holds the files examples name, and two mock endpoints stand in for
``http://127.0.0.1:80xx/v1``, ``URL``, ``URL1`` and ``URL2``. Placeholders
``RUN``, ``RUN_A``, ``RUN_B`` and ``RUN_DIR`` are run folders.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from infermeter.cli.main import build_command
from infermeter.servers.mock import MockConfig, MockProcess
from tests.cli_main import run_main
from tests.e2e.examples_world import ROOT, World, build_world

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COMMANDS = set(build_command().commands)
PLACEHOLDERS = {"RUN": "runs/a", "RUN_A": "runs/a", "RUN_B": "runs/b",
                "RUN_DIR": "runs/accuracy-run"}  # fmt: skip
SERVERS = {"serve-mock", "serve-sim"}
LOCAL_URL = re.compile(r"^http://127\.0\.0\.1:(\d+)/v1$")


@dataclass(frozen=True)
class Example:
    source: str  # "README.md" or "infermeter run --help"
    text: str  # the command as written, without its comment
    comment: str

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text.split("||")[0].rstrip(" &"))[1:]

    @property
    def command(self) -> str:
        return self.argv[0] if self.argv else ""

    def expected_codes(self) -> set[int]:
        if "||" in self.text:
            return {0, 3, 4}
        found = re.search(r"\bexit (\d+)", self.comment)
        return {int(found.group(1))} if found else {0}

    def test_flags(self) -> list[str]:
        found = re.search(r"\(tests: ([^)]*)\)", self.comment)
        return shlex.split(found.group(1)) if found else []


def _split_comment(line: str) -> tuple[str, str]:
    text, _, comment = line.partition(" #")
    return text.strip(), comment.strip()


def _lines(block: str) -> Iterator[str]:
    joined: list[str] = []
    for raw in block.splitlines():
        line = raw.strip()
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1].rstrip() + " " + line
        else:
            joined.append(line)
    yield from (line for line in joined if line.startswith("infermeter "))


def readme_examples() -> list[Example]:
    text = (ROOT / "README.md").read_text()
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        found += [Example("README.md", *_split_comment(line)) for line in _lines(block)]
    for span in re.findall(r"`(infermeter [^`]+)`", text):
        words = span.split()
        if len(words) > 2:  # a bare command name in prose mentions it, shows no use
            found.append(Example("README.md", " ".join(words), ""))
    return found


def help_examples() -> list[Example]:
    found = []

    def walk(command: object, path: list[str]) -> None:
        text = f"{getattr(command, 'help', '') or ''}\n{getattr(command, 'epilog', '') or ''}"
        source = " ".join(["infermeter", *path, "--help"])
        found.extend(Example(source, *_split_comment(line)) for line in _lines(text))
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(build_command(), [])
    return found


def _examples() -> list[Example]:
    seen: dict[str, Example] = {}
    for example in readme_examples() + help_examples():
        if example.command in COMMANDS:
            seen.setdefault(example.text, example)  # the first text that shows it
    return list(seen.values())


EXAMPLES = _examples()


def test_examples_are_found() -> None:
    sources = {e.source for e in EXAMPLES}
    assert "README.md" in sources and "infermeter run --help" in sources
    assert len(EXAMPLES) >= 40


# -- the world --------------------------------------------------------------------


@pytest.fixture(scope="module")
def endpoints() -> Iterator[list[str]]:
    timed = MockConfig(mode="timed", ttft="const:0.02", itl="const:0.002")
    with MockProcess(timed) as first, MockProcess(timed) as second:
        yield [first, second]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, endpoints: list[str]) -> World:
    return build_world(tmp_path_factory.mktemp("world") / "template", endpoints)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _with_flags(argv: list[str], flags: list[str]) -> list[str]:
    """``argv`` with ``flags`` set: an existing flag's value replaced, else added."""
    out = list(argv)
    i = 0
    while i < len(flags):
        flag = flags[i]
        takes_value = i + 1 < len(flags) and not flags[i + 1].startswith("--")
        value = flags[i + 1] if takes_value else None
        if flag in out and value is not None and out.index(flag) + 1 < len(out):
            out[out.index(flag) + 1] = value
        elif flag not in out:
            out += [flag] if value is None else [flag, value]
        i += 2 if takes_value else 1
    return out


def _resolve(example: Example, world: World, cwd: Path) -> list[str]:
    """The example's argv in the world: endpoints, placeholders, run folders."""
    ports: dict[str, str] = {}
    argv = []
    for arg in _with_flags(example.argv, example.test_flags()):
        local = LOCAL_URL.match(arg)
        if local or arg in ("URL", "URL1", "URL2"):
            key = local.group(1) if local else arg
            ports.setdefault(key, world.urls[len(ports) % len(world.urls)])
            arg = ports[key]
        arg = PLACEHOLDERS.get(arg, arg)
        world.provide(cwd, arg, command=example.command)
        argv.append(arg)
    if example.command in SERVERS:
        argv = _with_flags(argv, ["--port", str(_free_port())])
    return argv


# -- running ----------------------------------------------------------------------


def _serve(argv: list[str], cwd: Path) -> None:
    """Start a server example, wait for its /v1/models, stop it."""
    port = argv[argv.index("--port") + 1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "infermeter", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[0]
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/v1/models", timeout=5
                ):
                    return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{argv} did not answer on port {port}")
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.text for e in EXAMPLES])
def test_example_runs_and_ends_as_its_text_says(
    example: Example, world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if (
        "summary_results.json" in example.text
        and not (world.template / "summary_results.json").exists()
    ):
        pytest.skip("needs ../shared/data/mlperf/summary_results_v4.1.json")
    cwd = tmp_path / "cwd"
    world.copy_to(cwd)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("INFERMETER_HOME", str(cwd))  # the world's store.sqlite
    monkeypatch.setenv("OPENAI_API_KEY", "sk-example")
    monkeypatch.setenv("COLUMNS", "200")
    argv = _resolve(example, world, cwd)
    if example.command in SERVERS:
        _serve(argv, cwd)
        return
    result = run_main(*argv)
    assert "internal error" not in result.output, result.output
    assert "Traceback" not in result.output, result.output
    assert result.code in example.expected_codes(), (
        f"{example.source}: {example.text!r} exited {result.code}, its text says "
        f"{sorted(example.expected_codes())}\n{result.output[-3000:]}"
    )
