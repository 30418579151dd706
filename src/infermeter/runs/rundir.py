"""Where a run is written, before it runs: a fresh folder, a unique id, a provisional run.json.

A folder that already holds a run is never overwritten unless asked
(``--force``). While the run goes, the folder holds a provisional run.json
(``"incomplete": true``) and ``records.journal``; a process that dies leaves
exactly that, which ``report`` and ``results`` read as an incomplete run.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from pathlib import Path
from typing import Any

from infermeter import __version__
from infermeter.errors import ConfigError

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


def prepare_run_dir(folder: Path, *, force: bool) -> Path:
    """Create ``folder`` for a new run; refuse one holding a run unless ``force``.

    Bad paths (a file, a place that cannot be written) are usage errors.
    """
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
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in held:  # --force: the old run's files go, nothing else does
            (folder / name).unlink()
        probe = folder / ".infermeter-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"--output-dir {str(folder)!r} cannot be written ({exc.strerror or exc}); "
            "pass a folder you can write to"
        ) from None
    return folder


def write_provisional(folder: Path, meta: dict[str, Any]) -> None:
    """run.json for a run in progress: what ``report`` shows if the process dies."""
    doc = {
        "schema_version": 1,
        "infermeter_version": __version__,
        "started_at": dt.datetime.now(dt.UTC).isoformat(),
        "label": "infermeter result (unverified)",
        **meta,
        "incomplete": True,
        "verdict": {"result": "INCOMPLETE", "valid": False, "reasons": []},
        "metrics": {},
        "files": [JOURNAL],
    }
    (folder / "run.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")


def remove_journal(folder: Path) -> None:
    """The finished run's records.npz holds every row: the journal has done its job."""
    (folder / JOURNAL).unlink(missing_ok=True)
