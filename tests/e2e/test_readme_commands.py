"""Every ``infermeter`` command shown in README.md exists with the options it uses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from infermeter.cli.main import build_command

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_commands() -> list[str]:
    blocks = re.findall(r"```\n(.*?)```", README.read_text(), flags=re.S)
    lines = [
        line.split("#")[0].strip() for block in blocks for line in block.splitlines()
    ]
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line
        elif line.startswith("infermeter "):
            joined.append(line)
    inline = [
        " ".join(m.split())
        for m in re.findall(r"`(infermeter [^`]+)`", README.read_text())
    ]
    return sorted({c.rstrip(" &") for c in [*joined, *inline]})


COMMANDS = _readme_commands()


def test_the_readme_shows_commands() -> None:
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("line", COMMANDS)
def test_readme_command_and_options_exist(line: str) -> None:
    words = shlex.split(line)[1:]
    command = build_command()
    while getattr(command, "commands", None) and words and words[0] in command.commands:
        command = command.commands[words.pop(0)]
    if getattr(command, "commands", None):  # a group must run on its own
        assert command.invoke_without_command, f"{line!r} names no subcommand"
    known = {
        opt for param in command.params for opt in [*param.opts, *param.secondary_opts]
    }
    used = {w.split("=")[0] for w in words if w.startswith("--")}
    assert used <= known, f"{line!r}: unknown options {sorted(used - known)}"
