"""Read MLPerf log files, official or ours: summary `key : value` lines, detail JSON.

One reader for both engines, so ``--engine mlcommons`` runs and comparisons
with the official wheel see the same keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER = ":::MLLOG "


@dataclass
class DetailFile:
    """The detail log: the last value of each key, and every error and warning."""

    values: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def parse_detail(text: str) -> DetailFile:
    """Parse ``mlperf_log_detail.txt`` text; lines without the marker are skipped."""
    out = DetailFile()
    for line in text.splitlines():
        if not line.startswith(MARKER):
            continue
        entry = json.loads(line[len(MARKER) :])
        key, value = entry["key"], entry.get("value")
        meta = entry.get("metadata") or {}
        if meta.get("is_error"):
            out.errors.append(str(value))
        elif meta.get("is_warning"):
            out.warnings.append(str(value))
        out.values[key] = value
    return out


def parse_summary(text: str) -> dict[str, str]:
    """Parse ``mlperf_log_summary.txt`` into ``{key: value}`` (both stripped).

    Every ``key : value`` line counts (first occurrence wins); banner lines,
    bullets (`` * ...``) and the warning/error count lines are not keys.
    """
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("*", "=")) or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key and value and key not in out:
            out[key] = value
    return out


def read_logs(
    folder: Path, prefix: str = "mlperf_log_"
) -> tuple[dict[str, str], DetailFile]:
    """The summary and detail logs of a run folder."""
    summary = (folder / f"{prefix}summary.txt").read_text(errors="replace")
    detail = (folder / f"{prefix}detail.txt").read_text(errors="replace")
    return parse_summary(summary), parse_detail(detail)


def read_accuracy(path: Path) -> list[dict[str, Any]]:
    """The entries of ``mlperf_log_accuracy.json``."""
    entries: list[dict[str, Any]] = json.loads(path.read_text() or "[]")
    return entries
