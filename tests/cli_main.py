"""Run ``infermeter`` in-process through ``main()``: the real exit codes and error lines.

``CliRunner`` stops at typer and lets infermeter's own errors escape as
exceptions; ``main()`` is what maps them to exit 2 (usage) or 1 and one line.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass

from infermeter.cli.main import main


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_main(*args: str) -> Result:
    """``infermeter ARGS`` as the console script runs it; never raises SystemExit."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["infermeter", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
    return Result(code, out.getvalue(), err.getvalue())


def flat(text: str) -> str:
    """``text`` without line breaks or table rules: Rich wraps long lines and cells
    at the console's width, which depends on where the test runs (tmp paths vary)."""
    return " ".join(text.replace("│", " ").split())
