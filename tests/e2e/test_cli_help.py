"""Every command and subcommand has help text that ends with examples (sqlite-utils' rule)."""

from __future__ import annotations

import pytest

from infermeter.cli.main import build_command


def _commands() -> list[list[str]]:
    root = build_command()
    paths: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, [*path, name])
        else:
            paths.append(path)

    walk(root, [])
    return paths


COMMANDS = _commands()


def test_the_main_commands_are_registered() -> None:
    names = {path[0] for path in COMMANDS}
    assert {
        "run",
        "benchmarks",
        "accuracy",
        "results",
        "compare",
        "diff",
        "report",
        "plan",
        "model",
        "serve-mock",
    } <= names


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_help_ends_with_examples(
    path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = build_command().main(
        args=[*path, "--help"], prog_name="infermeter", standalone_mode=False
    )
    output = capsys.readouterr().out
    assert code == 0, output
    options = output.find("--help")
    examples = output.rfind("Example")
    assert examples > options > 0, "examples come after the options"
    assert "infermeter" in output[examples:]


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_at_80_columns_every_option_name_is_whole(
    path: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    build_command().main(
        args=[*path, "--help"], prog_name="infermeter", standalone_mode=False
    )
    output = capsys.readouterr().out
    assert max(len(line) for line in output.splitlines()) <= 80
    assert "…" not in output, [line for line in output.splitlines() if "…" in line]
    command = build_command()
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    for param in command.params:
        for flag in [*param.opts, *param.secondary_opts]:
            if flag.startswith("--"):
                assert flag in output, flag
