"""Every ``infermeter`` command shown in README.md and docs/ exists with the options it uses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from infermeter.cli.main import build_command

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_LEVEL = set(build_command().commands)


def _commands_in(text: str) -> list[str]:
    """Command lines of code blocks (continuations joined) and inline code spans."""
    found: list[str] = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        lines = [line.split(" #")[0].strip() for line in block.splitlines()]
        for line in lines:
            if found and found[-1].endswith("\\"):
                found[-1] = found[-1][:-1] + " " + line
            elif line.startswith("infermeter "):
                found.append(line)
    found += [" ".join(m.split()) for m in re.findall(r"`(infermeter [^`]+)`", text)]
    return [c.rstrip(" &") for c in found]


def _is_command(line: str) -> bool:
    words = line.split()
    return len(words) > 1 and words[1] in TOP_LEVEL


COMMANDS = sorted(
    {c for doc in DOCS for c in _commands_in(doc.read_text()) if _is_command(c)}
)


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) >= 25


@pytest.mark.parametrize("line", COMMANDS)
def test_documented_command_and_options_exist(line: str) -> None:
    words = shlex.split(line)[1:]
    command = build_command()
    while getattr(command, "commands", None) and words and words[0] in command.commands:
        command = command.commands[words.pop(0)]
    if getattr(command, "commands", None):  # a group must run on its own
        assert command.invoke_without_command, f"{line!r} names no subcommand"
    known = {
        opt for param in command.params for opt in [*param.opts, *param.secondary_opts]
    } | {"--help"}  # click's own, on every command (not among its params)
    used = {w.split("=")[0] for w in words if w.startswith("--")}
    assert used <= known, f"{line!r}: unknown options {sorted(used - known)}"
