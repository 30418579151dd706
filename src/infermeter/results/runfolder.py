"""Read a run folder (run.json + records.npz) written by ``infermeter run``.

Readers accept extra keys; anything missing or malformed is one ``StoreError`` line.
A run whose process died (``"incomplete": true``) is read from its records
journal, with metrics recomputed from the samples it kept; an accuracy run
has no records.npz (its records are the accuracy log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from infermeter import jsonfile
from infermeter.errors import StoreError, StorePathError
from infermeter.results.records import (
    Records,
    no_records,
    read_journal_records,
    read_records,
)
from infermeter.results.recovered import recovered_metrics

RUN_JSON = "run.json"
RECORDS = "records.npz"
JOURNAL = "records.journal"
SUPPORTED_SCHEMA = 1
REQUIRED_KEYS = ("run_id", "benchmark", "scenario", "verdict", "metrics")


@dataclass(frozen=True)
class RunFolder:
    """A run folder on disk: ``meta`` is run.json as read."""

    path: Path
    meta: dict[str, Any] = field(repr=False)

    @property
    def run_id(self) -> str:
        return str(self.meta["run_id"])

    @property
    def benchmark(self) -> str:
        return str(self.meta["benchmark"])

    @property
    def scenario(self) -> str:
        return str(self.meta["scenario"])

    @property
    def metrics(self) -> dict[str, Any]:
        metrics = self.meta.get("metrics") or {}
        return dict(metrics) if isinstance(metrics, dict) else {}

    @property
    def verdict(self) -> dict[str, Any]:
        verdict = self.meta.get("verdict") or {}
        return dict(verdict) if isinstance(verdict, dict) else {}

    @property
    def is_token_run(self) -> bool:
        return "tokens_per_second" in self.metrics or "ttft_ns" in self.metrics

    @property
    def incomplete(self) -> bool:
        """The process died mid-run: records come from the journal it streamed."""
        return bool(self.meta.get("incomplete"))

    @cached_property
    def records(self) -> Records:
        """The per-sample arrays (loaded on first use): records.npz, else the journal.

        An accuracy run has neither: its records are empty.
        """
        if self.incomplete:
            return read_journal_records(self.path / JOURNAL)
        if RECORDS in _listed_files(self.meta) or (self.path / RECORDS).exists():
            return read_records(self.path / RECORDS)
        return no_records()


def load_run(path: str | Path) -> RunFolder:
    """Open a run folder, checking run.json and that every listed file is there."""
    folder = Path(path)
    if not folder.is_dir():
        raise StorePathError(
            f"Run folder {str(folder)!r} does not exist; pass a folder "
            "written by 'infermeter run'."
        )
    meta = _read_run_json(folder / RUN_JSON)
    missing = [name for name in _listed_files(meta) if not (folder / name).exists()]
    if missing:
        raise StoreError(
            f"Run folder {str(folder)!r} is missing {', '.join(missing)} "
            "(listed in run.json); restore the files or rerun the benchmark."
        )
    run = RunFolder(folder, meta)
    if run.incomplete and not run.metrics:
        meta["metrics"] = recovered_metrics(run.records, run.scenario)
    return run


# run.json's sections that readers walk as objects or lists (absent or null is fine).
_OBJECTS = (
    "verdict", "metrics", "settings", "engine", "sut", "dataset", "power",
    "client", "environment", "token_counts",
)  # fmt: skip
_LISTS = ("warnings", "files", "find_peak_trials")
_TEXTS = ("run_id", "benchmark", "scenario", "mode", "label", "started_at")


def _read_run_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise StoreError(
            f"{str(path)!r} not found; is {str(path.parent)!r} a run folder?"
        )
    try:
        meta = jsonfile.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise StorePathError(
            f"{str(path)!r} is not valid JSON ({exc}); the run folder "
            "is damaged, rerun the benchmark."
        ) from None
    if not isinstance(meta, dict) or any(k not in meta for k in REQUIRED_KEYS):
        raise StorePathError(
            f"{str(path)!r} is not an infermeter run.json (needs keys "
            f"{', '.join(REQUIRED_KEYS)})."
        )
    _check_shape(path, meta)
    version = meta.get("schema_version", SUPPORTED_SCHEMA)
    if not isinstance(version, int) or version > SUPPORTED_SCHEMA:
        raise StoreError(
            f"{str(path)!r} has schema_version {version!r}; this "
            f"infermeter reads up to {SUPPORTED_SCHEMA}, upgrade it."
        )
    return meta


def _listed_files(meta: dict[str, Any]) -> list[str]:
    files = meta.get("files")
    names = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    if meta.get("incomplete") or meta.get("mode") == "AccuracyOnly":
        return names  # records.journal, or the accuracy log, instead
    # records.npz is expected even when an older writer did not list it.
    return names if RECORDS in names else [*names, RECORDS]


def _check_shape(path: Path, meta: dict[str, Any]) -> None:
    """A hand-edited or foreign run.json: one line naming the first wrong field."""
    for names, kind, word in (
        (_OBJECTS, dict, "an object"),
        (_LISTS, list, "a list"),
        (_TEXTS, str, "a string"),
    ):
        for name in names:
            value = meta.get(name)
            if (value is not None or name in REQUIRED_KEYS) and not isinstance(
                value, kind
            ):
                raise StorePathError(
                    f"{str(path)!r}: {name!r} is {type(value).__name__}, not {word}; "
                    "the run folder is damaged, rerun the benchmark."
                )
