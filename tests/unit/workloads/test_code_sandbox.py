"""MBXP programs run isolated: no network, bounded time and memory, empty environment."""

from __future__ import annotations

import pytest

from infermeter.workloads.accuracy import code_exec

pytestmark = pytest.mark.skipif(
    code_exec.isolation_problem() is not None,
    reason=str(code_exec.isolation_problem()),
)
PROMPT = "def add(a, b):\n"
TESTS = "assert add(2, 3) == 5\n"


def _run(body: str, tests: str = TESTS, timeout_s: float = 10.0) -> bool:
    return code_exec.passes(code_exec.program(PROMPT, body, tests), timeout_s=timeout_s)


def test_right_and_wrong_programs() -> None:
    assert _run("    return a + b\n")
    assert not _run("    return a - b\n")
    assert not _run("    return (\n")  # a syntax error fails, it does not crash


def test_check_function_is_called_on_the_entry_point() -> None:
    tests = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
    assert _run("    return a + b\n", tests)
    assert not _run("    return a * b\n", tests)


def test_no_network_even_loopback() -> None:
    body = (
        "    import socket\n"
        "    s = socket.socket()\n"
        "    s.settimeout(2)\n"
        "    s.connect(('127.0.0.1', 80))\n"
        "    return a + b\n"
    )
    assert not _run(body)


def test_time_and_memory_are_bounded() -> None:
    assert not _run("    while True:\n        pass\n", timeout_s=2)
    assert not _run("    x = bytearray(4 << 30)\n    return a + b\n")


def test_environment_is_empty() -> None:
    body = "    import os\n    assert not os.environ.get('HOME')\n    return a + b\n"
    assert _run(body)


def test_pass_rate_skips_other_languages() -> None:
    rate, graded, skipped = code_exec.mbxp_pass_rate(
        [PROMPT, PROMPT, "function add(a, b) {\n"],
        ["    return a + b\n", "    return 0\n", "  return a + b; }"],
        [TESTS, TESTS, "console.assert(add(2, 3) === 5)"],
    )
    assert (rate, graded, skipped) == (50.0, 2, 1)
