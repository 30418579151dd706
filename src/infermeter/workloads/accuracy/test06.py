"""LLM output consistency, as MLPerf compliance TEST06 checks it.

Three checks over every logged response (token ids of ``dtype``):

1. first token: the token reported through ``first_token`` (``token_data``)
   equals the start of the output, element by element (skipped in Offline,
   where LoadGen logs no first token);
2. EOS: the output ends with at most one EOS token (a run of two or more
   EOS at the end fails; EOS elsewhere is allowed);
3. sample length: ``token_count`` equals the number of output tokens.

An entry the check cannot read (no ``token_data`` where one is needed, no
``token_count``, bytes that are not whole tokens) fails that check, as it
fails the official script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from infermeter.errors import DatasetError
from infermeter.workloads.accuracy.log import LogEntry, decode_array

MAX_LISTED = 5
DEFAULT_EOS = 2  # Llama 2's EOS id, the official script's default


@dataclass(frozen=True, slots=True)
class Test06Result:
    """Outcome of the checks: one verdict per check and the first failures."""

    __test__ = False  # not a pytest class

    checked: int
    failures: tuple[str, ...]
    failed_count: int
    first_token_passed: bool | None = None  # None: skipped (Offline)
    eos_passed: bool = True
    length_passed: bool = True
    per_check: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.failed_count == 0

    def verify_lines(self) -> list[str]:
        """The lines of the official ``verify_accuracy.txt``."""
        first = (
            "Skipped" if self.first_token_passed is None else self.first_token_passed
        )
        done = "complete" if self.passed else "failed"
        return [
            f"First token check pass: {first}",
            f"EOS check pass: {self.eos_passed}",
            f"Sample length check pass: {self.length_passed}",
            f"TEST06 verification {done}",
        ]


def check_responses(
    entries: Sequence[LogEntry],
    *,
    dtype: str,
    eos_id: int | None,
    first_token: bool | None = None,
) -> Test06Result:
    """Run the checks on every entry (the first few failures are listed).

    ``first_token``: True checks every entry (a missing first token fails),
    False skips the check (Offline), None checks the entries that have one.
    ``eos_id`` None skips the EOS check.
    """
    failures: list[str] = []
    counts = {"first token": 0, "EOS": 0, "length": 0}
    failed = 0
    for entry in entries:
        problems = _problems(entry, dtype, eos_id, first_token)
        for check, _ in problems:
            counts[check] += 1
        if problems:
            failed += 1
            if len(failures) < MAX_LISTED:
                failures.append(f"sample {entry.qsl_idx}: {problems[0][1]}")
    return Test06Result(
        len(entries),
        tuple(failures),
        failed,
        first_token_passed=None if first_token is False else counts["first token"] == 0,
        eos_passed=counts["EOS"] == 0,
        length_passed=counts["length"] == 0,
        per_check=counts,
    )


def _problems(
    entry: LogEntry, dtype: str, eos_id: int | None, first_token: bool | None
) -> list[tuple[str, str]]:
    try:
        tokens = decode_array(entry.data, dtype, entry.qsl_idx)
    except DatasetError as exc:
        return [("length", str(exc))]
    out: list[tuple[str, str]] = []
    problem = _first_token_problem(entry, tokens, dtype, first_token)
    if problem:
        out.append(("first token", problem))
    if eos_id is not None and trailing_eos(tokens, eos_id) >= 2:
        out.append(("EOS", "the output ends with more than one EOS token"))
    if entry.token_count is None:
        out.append(("length", "no token_count logged"))
    elif entry.token_count != tokens.shape[0]:
        out.append(
            (
                "length",
                f"token_count {entry.token_count} != output length {len(tokens)}",
            )
        )
    return out


def _first_token_problem(
    entry: LogEntry, tokens: npt.NDArray[np.generic], dtype: str, wanted: bool | None
) -> str | None:
    if wanted is False or (wanted is None and entry.token_data is None):
        return None
    if entry.token_data is None:
        return "no first token logged"
    try:
        first = decode_array(entry.token_data, dtype, entry.qsl_idx)
    except DatasetError as exc:
        return str(exc)
    n = min(first.shape[0], tokens.shape[0])
    if not np.array_equal(first[:n], tokens[:n]):
        return "first token differs from the output's first token"
    return None


def trailing_eos(tokens: npt.NDArray[np.generic], eos_id: int) -> int:
    """EOS tokens at the end of the output, position 0 aside (as the official loop runs)."""
    count = 0
    for i in range(tokens.shape[0] - 1, 0, -1):
        if tokens[i] != eos_id:
            break
        count += 1
    return count
