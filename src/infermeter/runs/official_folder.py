"""The run folder of an ``--engine mlcommons`` run: the official logs, records.npz, run.json.

Same files and run.json keys as a native run; the verdict and metrics are read
from the official detail log, and ``engine`` names the official wheel and version.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.compat.official import (
    ENGINE_NAME,
    OfficialOutcome,
    official_metrics,
    official_version,
    verdict_reasons,
)
from infermeter.runs.folder import EFFECTIVE_KEYS, SCHEMA_VERSION, environment
from infermeter.version import __version__


def engine_meta() -> dict[str, str]:
    """run.json ``engine`` for the official LoadGen."""
    return {"name": ENGINE_NAME, "version": official_version()}


def write_official_folder(
    folder: Path, outcome: OfficialOutcome, *, meta: dict[str, Any]
) -> dict[str, Any]:
    """records.npz and run.json next to the official logs already in ``folder``."""
    np.savez_compressed(folder / "records.npz", **outcome.records)  # type: ignore[arg-type]
    files = [*outcome.files, "records.npz"]
    doc = official_document(outcome, meta=meta, files=files, run_id=folder.name)
    (folder / "run.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return doc


def official_document(
    outcome: OfficialOutcome, *, meta: dict[str, Any], files: list[str], run_id: str
) -> dict[str, Any]:
    """The run.json document (schema of docs/design.md)."""
    valid = outcome.valid
    requested = asdict(outcome.settings)
    requested["scenario"] = outcome.settings.scenario.value
    requested["mode"] = outcome.settings.mode.value
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "infermeter_version": __version__,
        "started_at": outcome.started_at.isoformat(),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(),
        "scenario": outcome.settings.scenario.value,
        "mode": outcome.settings.mode.value,
        "label": "infermeter result (unverified)",
        **meta,
        "settings": {
            "requested": requested,
            "effective": {
                key: outcome.detail.get(f"effective_{key}") for key in EFFECTIVE_KEYS
            },
        },
        "verdict": {
            "result": None if valid is None else ("VALID" if valid else "INVALID"),
            "valid": valid,
            "reasons": verdict_reasons(outcome) if valid is not True else [],
        },
        "metrics": official_metrics(outcome),
        "find_peak_trials": [],
        "environment": environment(),
        "files": files,
    }
