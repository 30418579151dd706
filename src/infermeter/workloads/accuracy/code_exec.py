"""MBXP pass rate: run each generated program behind a real isolation boundary.

A program (prompt + completion + the sample's tests, then ``check(entry_point)``
when the tests define ``check``) runs in a child process that is

- in new user and network namespaces (``unshare -rn``): no network at all;
- limited by rlimits: CPU seconds, 1 GiB of address space, 1 MiB files, 64 fds;
- killed after a wall-clock timeout;
- started in an empty temporary directory with an empty environment and
  ``python -I -S`` (no site packages, no user paths).

Without ``unshare`` (or where user namespaces are off) nothing is executed:
``isolation_problem()`` says why and the metric is reported not computed.
Only Python samples run; samples in MBXP's other languages are not graded.
mbxp = 100 x passing programs / graded samples.
"""

from __future__ import annotations

import functools
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

TIMEOUT_S = 10.0
MEMORY_BYTES = 1 << 30
FILE_BYTES = 1 << 20
_ENTRY = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)


@functools.cache
def isolation_problem() -> str | None:
    """Why programs cannot be run isolated here (None: they can)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "no 'unshare' to isolate generated code (util-linux); MBXP not run"
    try:
        probe = subprocess.run(
            [unshare, "-rn", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"'unshare -rn' failed ({exc}); MBXP not run"
    if probe.returncode != 0:
        return "user/network namespaces are not available here; MBXP not run"
    return None


def _limits(cpu_s: int) -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def program(prompt: str, completion: str, tests: str) -> str:
    """The file that runs: the tests' ``check`` is called on the prompt's function."""
    text = f"{prompt}{completion}\n\n{tests}\n"
    entry = _ENTRY.search(prompt)
    if "def check(" in tests and entry is not None:
        text += f"\ncheck({entry.group(1)})\n"
    return text


def passes(source: str, *, timeout_s: float = TIMEOUT_S) -> bool:
    """Whether ``source`` exits 0 inside the sandbox (False on any failure)."""
    unshare = shutil.which("unshare")
    if unshare is None or isolation_problem() is not None:
        raise RuntimeError(
            "passes() called without isolation; check isolation_problem()"
        )
    with tempfile.TemporaryDirectory(prefix="infermeter-mbxp-") as tmp:
        path = Path(tmp) / "main.py"
        path.write_text(source, encoding="utf-8")
        cmd = [unshare, "-rn", sys.executable, "-I", "-S", "-B", str(path)]
        try:
            done = subprocess.run(
                cmd,
                cwd=tmp,
                env={},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout_s,
                preexec_fn=lambda: _limits(int(timeout_s) + 1),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False
    return done.returncode == 0


def is_python(prompt: str) -> bool:
    """MBXP Python prompts end in a ``def`` signature; other languages do not."""
    return _ENTRY.search(prompt) is not None


def mbxp_pass_rate(
    prompts: Sequence[str], completions: Sequence[str], tests: Sequence[str]
) -> tuple[float | None, int, int]:
    """(pass rate over graded samples, graded, not graded); None when none ran."""
    graded = passed = skipped = 0
    for prompt, completion, test in zip(prompts, completions, tests, strict=True):
        if not is_python(prompt):
            skipped += 1
            continue
        graded += 1
        passed += passes(program(prompt, completion, test))
    return (100.0 * passed / graded if graded else None), graded, skipped
