"""A built-in table of headline published figures, so compare works without an import.

Package data ``data/headline_results.json``: MLPerf Inference v4.1 rows typed
from the published summary, each with its result ID.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from infermeter.results.accelerators import normalise
from infermeter.results.published import PublishedResult

DATA = "headline_results.json"


@cache
def _document() -> dict[str, Any]:
    text = resources.files("infermeter.results").joinpath("data", DATA).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def headline_source() -> str:
    return str(_document()["source"])


def headline_results() -> list[PublishedResult]:
    """The built-in rows as ``PublishedResult`` (source: the built-in table)."""
    doc = _document()
    source = f"built-in table: {doc['source']}"
    return [_row(r, source, str(doc["retrieved_at"])) for r in doc["rows"]]


def _row(r: dict[str, Any], source: str, retrieved_at: str) -> PublishedResult:
    acc = normalise(str(r["accelerator"]), str(r.get("system") or ""))
    return PublishedResult(
        result_id=str(r["result_id"]),
        round=str(r["round"]),
        division=str(r["division"]),
        suite="datacenter",
        availability=str(r["availability"]),
        submitter=str(r["submitter"]),
        system=str(r["system"]),
        benchmark=str(r["benchmark"]),
        scenario=str(r["scenario"]),
        value=float(r["value"]),
        unit=str(r["unit"]),
        nodes=1,
        total_accelerators=int(r["accelerators"]),
        accelerator_raw=acc.raw,
        accelerator=acc.name,
        accelerator_variant=acc.variant,
        power_w=float(r["power_w"]) if "power_w" in r else None,
        source=source,
        retrieved_at=retrieved_at,
    )
