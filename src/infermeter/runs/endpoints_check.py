"""``infermeter endpoints check``: the official submission checker, run as a subprocess.

The checker (PyPI ``endpoints-submission-cli``, command ``endpoints-submission-cli
check-submission``) is never imported: it may live in its own venv (any Python >= 3.10;
``pip install 'infermeter[endpoints]'`` puts it beside infermeter). Found, in order:
``--checker CMD``, ``$INFERMETER_ENDPOINTS_CHECKER``, the command beside this Python,
then on PATH. Its JSON report (``-o FILE``) is read back; its verdict is its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError, InfermeterError, PathError

CHECKER_ENV = "INFERMETER_ENDPOINTS_CHECKER"
CHECKER_COMMAND = "endpoints-submission-cli"


@dataclass(frozen=True, slots=True)
class Finding:
    """One result of the checker: its rule id, severity, message and file."""

    rule: str
    severity: str
    message: str
    path: str


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Everything the checker reported, and the command that ran."""

    command: list[str]
    findings: list[Finding]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def summary(self) -> str:
        verdict = "FAILED" if self.errors else "PASSED"
        rules = sorted({f.rule for f in self.errors})
        tail = f" (error rules: {', '.join(rules)})" if rules else ""
        return (
            f"submission-checker {verdict}: {len(self.errors)} error(s), "
            f"{len(self.warnings)} warning(s){tail}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [_row(f) for f in self.findings],
        }


def _row(f: Finding) -> dict[str, str]:
    return {
        "rule": f.rule,
        "severity": f.severity,
        "message": f.message,
        "path": f.path,
    }


def find_checker(given: str | None = None) -> str | None:
    """The checker's command, or None when it is not installed anywhere we look."""
    for candidate in (given, os.environ.get(CHECKER_ENV)):
        if candidate:
            found = shutil.which(candidate)
            if found is None:
                raise ConfigError(
                    f"checker {candidate!r} is not an executable; give the path of "
                    f"{CHECKER_COMMAND} (e.g. ~/checker/bin/{CHECKER_COMMAND})."
                )
            return found
    beside = Path(sys.executable).parent / CHECKER_COMMAND
    if beside.is_file():
        return str(beside)
    return shutil.which(CHECKER_COMMAND)


def run_checker(
    path: Path, given: str | None = None, timeout_s: float = 600.0
) -> CheckReport:
    """Run the checker on ``path`` (the organisation's folder) and read its findings."""
    if not path.is_dir():
        raise PathError(
            f"{path} is not a folder; give <out>/<org> of 'endpoints package'."
        )
    command = find_checker(given)
    if command is None:
        raise InfermeterError(
            f"the official checker is not installed: python3.12 -m venv ~/checker && "
            f"~/checker/bin/pip install endpoints-submission-cli, then --checker "
            f"~/checker/bin/{CHECKER_COMMAND} (or pip install 'infermeter[endpoints]')."
        )
    with tempfile.TemporaryDirectory(prefix="infermeter-check-") as tmp:
        report = Path(tmp) / "report.json"
        argv = [command, "check-submission", str(path), "-q", "-o", str(report)]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if not report.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            raise InfermeterError(
                f"the checker wrote no report (exit {done.returncode}): {' '.join(tail)}"
            )
        data = json.loads(report.read_text(encoding="utf-8"))
    return CheckReport(argv, [_finding(r) for r in data.get("results", [])])


def _finding(row: dict[str, Any]) -> Finding:
    return Finding(
        rule=str(row.get("rule", "")),
        severity=str(row.get("severity", "")).lower(),
        message=str(row.get("message", "")),
        path=str(row.get("path") or ""),
    )
