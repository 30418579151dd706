"""``mlperf_log_accuracy.json``: a JSON array, one line per response, data as uppercase hex."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AccuracyEntry:
    seq_id: int
    qsl_idx: int
    data: bytes
    token_data: bytes | None = None
    token_count: int | None = None


def render_accuracy(entries: list[AccuracyEntry]) -> str:
    """The file as LoadGen writes it (``[\\n]\\n`` when empty)."""
    if not entries:
        return "[\n]\n"
    lines = [_line(e) for e in sorted(entries, key=lambda e: e.seq_id)]
    return "[\n" + ",\n".join(lines) + "\n]\n"


def _line(e: AccuracyEntry) -> str:
    parts = [
        f'"seq_id" : {e.seq_id}',
        f'"qsl_idx" : {e.qsl_idx}',
        f'"data" : "{e.data.hex().upper()}"',
    ]
    if e.token_data is not None:
        parts.append(f'"token_data" : "{e.token_data.hex().upper()}"')
    if e.token_count is not None:
        parts.append(f'"token_count" : {e.token_count}')
    return "{ " + ", ".join(parts) + " }"
