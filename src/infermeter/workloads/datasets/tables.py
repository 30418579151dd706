"""Tabular datasets: pandas pickles (MLPerf LLM sets), CSV, Parquet, JSONL.

Columns are found by the first matching candidate name (the names MLPerf's
processed files use) unless the user maps them: ``columns={"prompt": "question"}``.
JSONL is read lazily by byte offset, so a file larger than memory still runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import ConfigError, DatasetError, MissingDependencyError
from infermeter.workloads.datasets.base import Sample

# role -> column names tried in order (MLPerf processed files, then common ones)
CANDIDATES: dict[str, tuple[str, ...]] = {
    "prompt": ("input", "text_input", "prompt", "question", "text"),
    "input_ids": ("tok_input", "input_tokens", "input_ids"),
    "reference": (
        "output",
        "ref_output",
        "gt_output",
        "ground_truth",
        "response",
        "answer",
        "reference",
    ),
    "output_ids": ("tok_output", "output_tokens"),
    "output_tokens": ("tok_output_length", "output_len", "max_tokens"),
    "task": ("dataset", "metric", "task"),
}
ROLES = tuple(CANDIDATES)


def resolve_columns(
    available: Sequence[str], mapping: Mapping[str, str], *, where: str
) -> dict[str, str]:
    """Role -> column: the user's mapping (checked) plus the candidates found."""
    unknown = [role for role in mapping if role not in CANDIDATES]
    if unknown:
        raise DatasetError(
            f"{where}: unknown column role {unknown[0]!r}. "
            f"Known roles: {', '.join(ROLES)}."
        )
    for role, column in mapping.items():
        if column not in available:
            raise DatasetError(
                f"{where}: column {column!r} (for {role}) does not exist. "
                f"Columns: {', '.join(map(str, available))}."
            )
    found = dict(mapping)
    for role, names in CANDIDATES.items():
        if role not in found:
            match = next((n for n in names if n in available), None)
            if match is not None:
                found[role] = match
    if "prompt" not in found and "input_ids" not in found:
        raise DatasetError(
            f"{where}: no prompt column found "
            f"(tried {', '.join(CANDIDATES['prompt'])}); map one, e.g. "
            f"--dataset-column prompt=<name>. Columns: {', '.join(map(str, available))}."
        )
    return found


def sample_from_row(
    index: int, row: Mapping[str, Any], cols: Mapping[str, str]
) -> Sample:
    """Build a Sample from one row using the resolved columns."""

    def get(role: str) -> Any:
        column = cols.get(role)
        value = None if column is None else row.get(column)
        # pandas fills missing CSV/Parquet cells with NaN
        return None if isinstance(value, float) and value != value else value

    ids = get("input_ids")
    out_ids = get("output_ids")
    out_len = get("output_tokens")
    if out_len is None and out_ids is not None:
        out_len = len(out_ids)
    ref = get("reference")
    return Sample(
        index=index,
        prompt=None if get("prompt") is None else str(get("prompt")),
        input_ids=None if ids is None else np.asarray(ids, dtype=np.int64),
        output_tokens=None if out_len is None else int(out_len),
        reference=None if ref is None else str(ref),
        task=None if get("task") is None else str(get("task")),
    )


class FrameSource:
    """Rows of a pandas DataFrame (pickle, CSV, Parquet)."""

    def __init__(self, name: str, frame: Any, columns: Mapping[str, str], where: str):
        self.name = name
        self._frame = frame.reset_index(drop=True)
        self._cols = resolve_columns(list(frame.columns), columns, where=where)

    def __len__(self) -> int:
        return len(self._frame)

    def read(self, index: int) -> Sample:
        row = self._frame.iloc[index].to_dict()
        return sample_from_row(index, row, self._cols)


def require_pandas() -> Any:
    """pandas, or one line naming the extra to install."""
    return _pandas()


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependencyError("pandas", "datasets") from None
    return pd


def pickle_refusal(path: Path) -> ConfigError:
    """The one-line error for a pickle nobody said to trust."""
    out = path.with_suffix(".parquet").name
    return ConfigError(
        f"{str(path)!r} is a pickle: loading it runs any code it holds. If you "
        "trust the file, pass --allow-pickle; or convert it once with "
        f"'infermeter datasets convert {path.name} {out} --allow-pickle' "
        "and use the Parquet (or JSONL) file from then on"
    )


def read_frame(path: Path, fmt: str, *, allow_pickle: bool = False) -> Any:
    """A DataFrame from a pickle, CSV or Parquet file, with one-line errors.

    A pickle is read only with ``allow_pickle``: unpickling runs code, so the
    caller must have been told to trust the file (``--allow-pickle``).
    """
    if fmt == "pickle" and not allow_pickle:
        raise pickle_refusal(path)
    pd = _pandas()
    try:
        if fmt == "pickle":
            frame = pd.read_pickle(path)
        elif fmt == "csv":
            frame = pd.read_csv(path)
        else:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise MissingDependencyError("pyarrow", "parquet") from None
            frame = pd.read_parquet(path)
    except MissingDependencyError:
        raise
    except Exception as exc:  # pandas raises many types for a bad file
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DatasetError(
            f"Cannot read {fmt} dataset {str(path)!r}: {first}"
        ) from None
    if not isinstance(frame, pd.DataFrame):
        raise DatasetError(
            f"{str(path)!r} holds a {type(frame).__name__}, not a pandas DataFrame."
        )
    return frame


class JsonlSource:
    """One JSON object per line, read lazily by byte offset."""

    def __init__(self, path: Path, columns: Mapping[str, str]) -> None:
        self.name = path.name
        self._path = path
        self._offsets = _line_offsets(path)
        if not self._offsets:
            raise DatasetError(f"JSONL dataset {str(path)!r} is empty.")
        first = self._row(0)
        self._cols = resolve_columns(list(first), columns, where=str(path))

    def __len__(self) -> int:
        return len(self._offsets)

    def _row(self, index: int) -> dict[str, Any]:
        with self._path.open("rb") as fh:
            fh.seek(self._offsets[index])
            line = fh.readline()
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{self._path}: line {index + 1} is not valid JSON ({exc.msg})."
            ) from None
        if not isinstance(row, dict):
            raise DatasetError(f"{self._path}: line {index + 1} is not a JSON object.")
        return row

    def read(self, index: int) -> Sample:
        return sample_from_row(index, self._row(index), self._cols)


def _line_offsets(path: Path) -> list[int]:
    offsets: list[int] = []
    position = 0
    with path.open("rb") as fh:
        for line in fh:
            if line.strip():
                offsets.append(position)
            position += len(line)
    return offsets
