"""``infermeter datasets convert``: a table (pickle, CSV, Parquet, JSONL) to Parquet or JSONL.

MLPerf's reference LLM datasets are pandas pickles, and unpickling runs
code. Converting once, with ``allow_pickle`` as the explicit act of trust,
gives a file that is plain data from then on. Needs pandas (the
``datasets`` extra); Parquet also needs pyarrow (the ``parquet`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError, DatasetError, MissingDependencyError
from infermeter.outfile import replacing
from infermeter.workloads.datasets.tables import read_frame, require_pandas

READS = {".pkl": "pickle", ".pickle": "pickle", ".csv": "csv", ".parquet": "parquet"}
WRITES = (".parquet", ".jsonl")


@dataclass(frozen=True, slots=True)
class Converted:
    """What was written."""

    path: Path
    rows: int
    columns: tuple[str, ...]


def convert_table(
    source: Path, target: Path, *, allow_pickle: bool = False
) -> Converted:
    """Read ``source`` (format from its suffix) and write ``target`` (.parquet or .jsonl)."""
    if target.suffix not in WRITES:
        raise ConfigError(
            f"Cannot write {target.name!r}: give an output ending in "
            f"{' or '.join(WRITES)}"
        )
    if not source.is_file():
        raise ConfigError(f"Dataset file {str(source)!r} not found; check the path")
    if target.resolve() == source.resolve():
        raise ConfigError("the output must be another file than the input")
    frame = _read(source, allow_pickle=allow_pickle)
    if target.suffix == ".parquet":
        _require_pyarrow()
    with replacing(target) as partial:  # never a half-written file under the name
        if target.suffix == ".parquet":
            frame.to_parquet(partial)
        else:
            frame.to_json(partial, orient="records", lines=True, force_ascii=False)
    return Converted(target, len(frame), tuple(str(c) for c in frame.columns))


def _read(source: Path, *, allow_pickle: bool) -> Any:
    suffix = source.suffix.lower()
    if suffix == ".jsonl":
        pd = require_pandas()
        try:
            return pd.read_json(source, lines=True)
        except ValueError as exc:
            raise DatasetError(f"Cannot read JSONL {str(source)!r}: {exc}") from None
    fmt = READS.get(suffix)
    if fmt is None:
        raise ConfigError(
            f"Cannot convert {source.name!r}: known inputs end in "
            f"{', '.join([*READS, '.jsonl'])}"
        )
    return read_frame(source, fmt, allow_pickle=allow_pickle)


def _require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise MissingDependencyError("pyarrow", "parquet") from None
