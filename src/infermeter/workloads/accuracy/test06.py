"""LLM response checks in the spirit of MLPerf compliance TEST06.

For each logged response with token ids: (1) the first token reported through
``first_token`` equals the first token of the output; (2) EOS appears at most
once, and only as the last token; (3) ``token_count`` equals the number of
output tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from infermeter.workloads.accuracy.log import LogEntry, decode_array

MAX_LISTED = 5


@dataclass(frozen=True, slots=True)
class Test06Result:
    """Outcome of the checks: how many responses, and the first failures."""

    __test__ = False  # not a pytest class

    checked: int
    failures: tuple[str, ...]
    failed_count: int

    @property
    def passed(self) -> bool:
        return self.failed_count == 0


def check_responses(
    entries: Sequence[LogEntry], *, dtype: str, eos_id: int | None
) -> Test06Result:
    """Run the three checks on every entry (first few failures are listed)."""
    failures: list[str] = []
    failed = 0
    for entry in entries:
        problem = _problem(entry, dtype, eos_id)
        if problem:
            failed += 1
            if len(failures) < MAX_LISTED:
                failures.append(f"sample {entry.qsl_idx}: {problem}")
    return Test06Result(len(entries), tuple(failures), failed)


def _problem(entry: LogEntry, dtype: str, eos_id: int | None) -> str | None:
    tokens = decode_array(entry.data, dtype, entry.qsl_idx).tolist()
    if entry.token_data is not None:
        first = decode_array(entry.token_data, dtype, entry.qsl_idx).tolist()
        if not tokens or not first or first[0] != tokens[0]:
            return "first token differs from the output's first token"
    if eos_id is not None:
        positions = [i for i, t in enumerate(tokens) if t == eos_id]
        if len(positions) > 1 or (positions and positions[0] != len(tokens) - 1):
            return "EOS appears more than once or before the end"
    if entry.token_count is not None and entry.token_count != len(tokens):
        return f"token_count {entry.token_count} != output length {len(tokens)}"
    return None
