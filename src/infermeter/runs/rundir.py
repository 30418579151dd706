"""Where a run is written, before it runs: a fresh folder, a unique id, a provisional run.json.

A folder that already holds a run is never overwritten unless asked
(``--force``). While the run goes, the folder holds a provisional run.json
(``"incomplete": true``) and ``records.journal``; a process that dies leaves
exactly that, which ``report`` and ``results`` read as an incomplete run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.loadgen.journal import RecordJournal
from infermeter.outfile import writable_folder
from infermeter.runs.request import RunRequest
from infermeter.version import __version__

RUN_FILES = (
    "run.json",
    "records.npz",
    "records.journal",
    "mlperf_log_summary.txt",
    "mlperf_log_detail.txt",
    "mlperf_log_accuracy.json",
    "mlperf_log_trace.json",
)
JOURNAL = "records.journal"
INCOMPLETE_REASON = (
    "the run did not finish: the process ended before writing its results; "
    "the samples below are those records.journal kept"
)


def new_run_id(benchmark: str, scenario: str, now: dt.datetime | None = None) -> str:
    """``<UTC time>_<benchmark>_<scenario>_<6 hex>``: unique whatever the folder is called."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}_{benchmark}_{scenario}_{secrets.token_hex(3)}"


def default_run_dir(run_id: str, root: Path = Path("runs")) -> Path:
    """``runs/<run id without its suffix>``, or with it when that name is taken."""
    plain = root / run_id.rsplit("_", 1)[0]
    return plain if not plain.exists() else root / run_id


class RunDir:
    """The folder of one run, from before it starts until its files are written."""

    def __init__(self, path: Path, *, created: bool) -> None:
        self.path = path
        self._created = created
        self.journal: RecordJournal | None = None

    @classmethod
    def claim(cls, folder: Path, *, force: bool) -> RunDir:
        """Create ``folder`` for a new run; refuse one holding a run unless ``force``.

        Bad paths (a file, a place that cannot be written) are usage errors.
        """
        try:
            return cls._claim(folder, force=force)
        except OSError as exc:
            raise ConfigError(
                f"--output-dir {str(folder)!r} cannot be written "
                f"({exc.strerror or exc}); pass a folder you can write to"
            ) from None

    @classmethod
    def _claim(cls, folder: Path, *, force: bool) -> RunDir:
        if folder.exists() and not folder.is_dir():
            raise ConfigError(
                f"--output-dir {str(folder)!r} is a file, not a folder; "
                "pass a folder path (it is created if missing)"
            )
        held = [name for name in RUN_FILES if (folder / name).exists()]
        if held and not force:
            raise ConfigError(
                f"--output-dir {str(folder)!r} already holds a run ({held[0]}); "
                "pass another --output-dir, or --force to replace it"
            )
        created = not folder.exists()
        writable_folder(folder, "--output-dir")
        for name in held:  # --force: the old run's files go, nothing else does
            (folder / name).unlink()
        return cls(folder, created=created)

    def start(self, meta: dict[str, Any], *, journal: bool = True) -> None:
        """A provisional run.json (``"incomplete": true``) and the records journal.

        They are what ``report`` shows if the process dies before ``finish``.
        """
        doc = {
            "schema_version": 1,
            "infermeter_version": __version__,
            "started_at": dt.datetime.now(dt.UTC).isoformat(),
            "label": "infermeter result (unverified)",
            **meta,
            "incomplete": True,
            "verdict": {
                "result": "INCOMPLETE",
                "valid": False,
                "reasons": [INCOMPLETE_REASON],
            },
            "metrics": {},
            "files": [JOURNAL] if journal else [],
        }
        text = json.dumps(doc, indent=2, default=str) + "\n"
        (self.path / "run.json").write_text(text)
        if journal:
            self.journal = RecordJournal(self.path / JOURNAL)

    def finish(self) -> None:
        """The run's own files are written: the journal has done its job."""
        self.close()
        (self.path / JOURNAL).unlink(missing_ok=True)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

    @contextlib.contextmanager
    def discarded_on_error(self) -> Iterator[None]:
        """On an error here (the SUT would not start...), ``discard`` the folder."""
        try:
            yield
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """The run never started: take back what ``claim`` and ``start`` made."""
        self.close()
        for name in ("run.json", JOURNAL):
            (self.path / name).unlink(missing_ok=True)
        if self._created and not any(self.path.iterdir()):
            self.path.rmdir()


def provisional_meta(request: RunRequest, run_id: str) -> dict[str, Any]:
    """run.json keys known before the run: enough for ``report`` to show a crashed one."""
    secret = ("key", "token", "secret", "password")
    params = {
        k: v
        for k, v in request.sut_options.items()
        if k.endswith("_env") or not any(word in k.lower() for word in secret)
    }
    return {
        "run_id": run_id,
        "benchmark": request.benchmark,
        "scenario": request.scenario.value,
        "mode": request.mode.value,
        "sut": {"kind": request.sut, "params": params},
    }


def claim_run_folder(request: RunRequest, benchmark: str) -> tuple[RunDir, str]:
    """A unique run id and its folder, after the checks that need no SUT:
    a bad --store, an --output-dir that holds a run or cannot be written."""
    if request.index:
        check_store(request.store)
    run_id = new_run_id(benchmark, request.scenario.value)
    folder = request.output_dir or default_run_dir(run_id)
    return RunDir.claim(folder, force=request.force), run_id


def check_store(store: Path | None) -> None:
    """A --store that cannot be opened fails now, not after the run."""
    from infermeter.results.store import Store

    Store(store).close()
