"""The ``infermeter`` command: registers every subcommand and maps errors to exit codes.

Exit codes: 0 valid (or success), 1 error, 2 usage error, 3 run completed but INVALID.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from typing import Any

import typer
from rich.console import Console

from infermeter.cli import help_layout
from infermeter.errors import ConfigError, InfermeterError

help_layout.install()

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INVALID = 3

app = typer.Typer(
    name="infermeter",
    help="Benchmark AI inference the MLPerf way, and further.",
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@app.callback()
def _root() -> None:
    """Benchmark AI inference the MLPerf way, and further.

    Results are infermeter results (unverified), not MLPerf results.
    """


def _register() -> None:
    # Each command module adds itself to ``app``; imported here so that
    # ``infermeter --help`` lists them all.
    from infermeter.cli import accuracy as _accuracy  # noqa: F401
    from infermeter.cli import agentic as _agentic  # noqa: F401
    from infermeter.cli import benchmarks as _benchmarks  # noqa: F401
    from infermeter.cli import compare as _compare  # noqa: F401
    from infermeter.cli import compliance as _compliance  # noqa: F401
    from infermeter.cli import datasets as _datasets  # noqa: F401
    from infermeter.cli import diff as _diff  # noqa: F401
    from infermeter.cli import endpoints as _endpoints  # noqa: F401
    from infermeter.cli import model as _model  # noqa: F401
    from infermeter.cli import plan as _plan  # noqa: F401
    from infermeter.cli import report as _report  # noqa: F401
    from infermeter.cli import results as _results  # noqa: F401
    from infermeter.cli import run as _run  # noqa: F401
    from infermeter.cli import serve_mock as _serve_mock  # noqa: F401
    from infermeter.cli import serve_sim as _serve_sim  # noqa: F401
    from infermeter.cli import sweep as _sweep  # noqa: F401


_register()


@functools.cache
def build_command() -> Any:
    """The click command of ``app``, with every command's examples moved last and
    every number option finite.

    Built once per process: typer evaluates every command's annotations anew
    on each build (0.2-0.5 s), and in-process callers (tests, ``main()`` run
    hundreds of times) would pay it per call. The command keeps no state
    between invocations: click parses each one into a fresh context.
    """
    command = typer.main.get_command(app)
    _examples_last(command)
    _finite_numbers(command)
    return command


def _finite_numbers(command: Any) -> None:
    """Every float option also refuses ``inf`` and ``nan``: Python reads them as
    floats, and as a rate, a duration or a bound they are never meant."""
    for sub in (getattr(command, "commands", None) or {}).values():
        _finite_numbers(sub)
    for param in command.params:
        if _is_float(param):
            param.callback = _finite(param.callback)


def _is_float(param: Any) -> bool:
    """A float option, in click's types or in newer typer's own type descriptors."""
    kind = getattr(param, "type", None)
    if kind is not None:
        return getattr(kind, "name", "") in ("float", "float range")
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return annotation in (float, float | None, list[float], list[float] | None)


def _finite(inner: Any) -> Any:
    def check(ctx: Any, param: Any, value: Any) -> Any:
        values = value if isinstance(value, tuple | list) else (value,)
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise typer.BadParameter(f"{value!r} is not a finite number.", ctx, param)
        return inner(ctx, param, value) if inner else value

    return check


def _examples_last(command: Any) -> None:
    # Commands write "Examples:" in their docstring; help reads best with
    # them after the options, so they move to the epilog.
    for sub in (getattr(command, "commands", None) or {}).values():
        _examples_last(sub)
    text = command.help or ""
    start = text.find("Example")
    if start > 0 and not command.epilog:
        command.help, command.epilog = text[:start].rstrip(), text[start:]


# Options whose value may be left out (the parser needs a value, so it is filled in).
OPTIONAL_VALUES = {"--ray": "local"}


def optional_values(argv: list[str]) -> list[str]:
    """``--ray`` with no address (last, or before another option) -> ``--ray local``."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        bare = i + 1 == len(argv) or argv[i + 1].startswith("-")
        if arg in OPTIONAL_VALUES and bare:
            out.append(OPTIONAL_VALUES[arg])
    return out


def main() -> None:
    """Entry point of the console script and ``python -m infermeter``."""
    debug = "--debug" in sys.argv or os.environ.get("INFERMETER_DEBUG") == "1"
    argv = optional_values([a for a in sys.argv[1:] if a != "--debug"])
    try:
        # Standalone mode: usage errors print with exit 2, typer.Exit(code) exits.
        build_command()(args=argv, prog_name="infermeter")
    except InfermeterError as exc:
        if debug:
            raise
        err_console.print(f"error: {exc}", markup=False)
        sys.exit(EXIT_USAGE if isinstance(exc, ConfigError) else EXIT_ERROR)
    except KeyboardInterrupt:
        err_console.print("interrupted", markup=False)
        sys.exit(130)
    except Exception as exc:  # one line, never a traceback, unless --debug
        if debug:
            raise
        err_console.print(
            f"internal error: {type(exc).__name__}: {exc} "
            "(rerun with --debug for the traceback)",
            markup=False,
        )
        sys.exit(EXIT_ERROR)
