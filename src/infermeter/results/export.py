"""Export store rows as CSV, JSON or Parquet (Parquet needs the optional pyarrow)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError, MissingDependencyError
from infermeter.outfile import replacing

FORMATS = ("csv", "json", "parquet")


def guess_format(path: Path, fmt: str | None) -> str:
    chosen = (fmt or path.suffix.lstrip(".") or "csv").lower()
    if chosen not in FORMATS:
        raise ConfigError(
            f"Unknown export format {chosen!r}. Known: {', '.join(FORMATS)}."
        )
    return chosen


def export_rows(
    rows: Sequence[dict[str, Any]], path: Path, fmt: str | None = None
) -> str:
    """Write ``rows`` to ``path``; writes to a temporary file first, then renames."""
    chosen = guess_format(path, fmt)
    columns = list(rows[0]) if rows else []
    with replacing(path) as tmp:
        if chosen == "csv":
            with tmp.open("w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=columns)
                writer.writeheader()
                writer.writerows(rows)
        elif chosen == "json":
            text = json.dumps(list(rows), indent=2, default=str)
            tmp.write_text(text, encoding="utf-8")
        else:
            _write_parquet(rows, columns, tmp)
    return chosen


def _write_parquet(
    rows: Sequence[dict[str, Any]], columns: list[str], tmp: Path
) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError("pyarrow", "parquet") from None
    table = pa.table({c: [row.get(c) for row in rows] for c in columns})
    pq.write_table(table, tmp)
