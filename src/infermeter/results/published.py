"""Parse MLCommons ``summary_results.json`` files of any round into typed rows.

Handles the drift of spec section 1.5: ``a#`` per node (float, int or ""),
``Total Accelerators`` (v6.0), ``compliance`` int or string, numbers as strings,
merged power rows, -99/-99.9 duplicates, previews and mislabelled units.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infermeter import jsonfile
from infermeter.errors import ConfigError
from infermeter.perfmodel.published import (
    SUMMARY_FORMS,
    summary_number,
    summary_records,
)
from infermeter.results.accelerators import normalise

REQUIRED = ("ID", "Model", "Scenario", "Performance_Result", "Performance_Units")
_UNITS = {
    "tokens/s": "tokens/s",
    "samples/s": "samples/s",
    "queries/s": "queries/s",
    "latency (ms)": "ms",
    "latency (s)": "ms",  # v6.0 reports some latencies in seconds: kept in ms
}
_TO_MS = {"latency (s)": 1000.0}
_ACCURACY_SUFFIX = re.compile(r"-(99(?:\.9)?)$")
_HETERO = re.compile(r"\(x\s*(\d+)\)")


@dataclass(frozen=True, slots=True)
class PublishedResult:
    """One published result row, with its provenance."""

    result_id: str
    round: str
    division: str
    suite: str
    availability: str
    submitter: str
    system: str
    benchmark: str
    scenario: str
    value: float
    unit: str
    nodes: int
    total_accelerators: int
    accelerator_raw: str
    accelerator: str
    accelerator_variant: str
    power_w: float | None = None
    energy_mj_per_query: float | None = None
    software: str = ""
    inferred: bool = False
    duplicate: bool = False
    flags: str = ""
    source: str = ""
    retrieved_at: str = ""
    details_url: str = ""

    @property
    def base_benchmark(self) -> str:
        """The benchmark without its accuracy target: llama2-70b-99.9 -> llama2-70b."""
        return _ACCURACY_SUFFIX.sub("", self.benchmark)

    @property
    def per_accelerator(self) -> float | None:
        """Derived figure (not an MLPerf metric): value / total accelerators."""
        if self.total_accelerators <= 0 or self.unit == "ms":
            return None
        return self.value / self.total_accelerators

    @property
    def per_joule(self) -> float | None:
        """Derived: tokens (or samples) per joule of whole-system AC power.

        Datacenter power rows give watts (value / W); edge rows give millijoules
        per query (1000 / mJ queries per joule).
        """
        if self.power_w and self.unit != "ms":
            return self.value / self.power_w
        if self.energy_mj_per_query:
            return 1000.0 / self.energy_mj_per_query
        return None

    @property
    def preview(self) -> bool:
        return self.availability.lower() == "preview"

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_summary_file(
    path: str | Path, *, retrieved_at: str | None = None
) -> list[PublishedResult]:
    """Read and parse one summary_results.json; one-line ConfigError when it is not."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read {str(file)!r}: {exc.strerror}.") from None
    try:
        data = jsonfile.loads(raw)
    except ValueError as exc:
        raise ConfigError(
            f"{str(file)!r} is not valid JSON ({exc}); expected an MLCommons "
            "summary_results.json (is the download truncated?)."
        ) from None
    source = f"{file.name} sha256:{hashlib.sha256(raw).hexdigest()[:16]}"
    when = retrieved_at or datetime.fromtimestamp(file.stat().st_mtime, UTC).date()
    return parse_summary(data, source=source, retrieved_at=str(when), name=file.name)


def parse_summary(
    data: object, *, source: str, retrieved_at: str, name: str = "input"
) -> list[PublishedResult]:
    """Turn the decoded JSON (either summary form) into rows, flagging duplicates
    and unit bugs."""
    records = summary_records(data)
    if not records:
        raise ConfigError(f"{name!r} is not {SUMMARY_FORMS}.")
    for index, record in enumerate(records):
        missing = [k for k in REQUIRED if k not in record]
        if missing:
            raise ConfigError(
                f"{name!r} row {index} lacks {', '.join(missing)}; not an MLCommons "
                "summary_results.json."
            )
    rows = [_parse_row(r, source, retrieved_at) for r in records]
    return _flag_units(_flag_duplicates(rows))


def _parse_row(r: dict[str, Any], source: str, retrieved_at: str) -> PublishedResult:
    value = _number(r["Performance_Result"])
    if value is None or value <= 0:
        raise ConfigError(
            f"Row {r.get('ID')!r} {r.get('Model')!r} has Performance_Result "
            f"{r['Performance_Result']!r}; a published result is a positive number."
        )
    unit_text = str(r["Performance_Units"]).strip().lower()
    value *= _TO_MS.get(unit_text, 1.0)
    acc = normalise(str(r.get("Accelerator") or ""), str(r.get("System") or ""))
    power, energy = _power(r)
    return PublishedResult(
        result_id=str(r["ID"]),
        round=str(r.get("version") or _round_from_id(str(r["ID"]))),
        division=str(r.get("Category") or ""),
        suite=str(r.get("Suite") or ""),
        availability=str(r.get("Availability") or ""),
        submitter=str(r.get("Submitter") or ""),
        system=str(r.get("System") or ""),
        benchmark=str(r["Model"]),
        scenario=str(r["Scenario"]),
        value=value,
        unit=_UNITS.get(unit_text, "?"),
        nodes=int(_number(r.get("Nodes")) or 1),
        total_accelerators=_total_accelerators(r),
        accelerator_raw=acc.raw,
        accelerator=acc.name,
        accelerator_variant=acc.variant,
        power_w=power,
        energy_mj_per_query=energy,
        software=str(r.get("Software") or ""),
        inferred=bool(_number(r.get("inferred")) or 0),
        source=source,
        retrieved_at=retrieved_at,
        details_url=str(r.get("Details") or ""),
    )


def screen(rows: Sequence[PublishedResult]) -> tuple[list[PublishedResult], list[str]]:
    """The rows an import stores, and one line per row it leaves out: a row that
    names an accelerator but not how many (per-accelerator figures would be
    wrong), and a row whose key (round, ID, benchmark, scenario, division) an
    earlier row of the file already holds (a store keeps one row a key; the first
    with a count stays, never overwritten by a later one)."""
    kept: dict[tuple[str, str, str, str, str], PublishedResult] = {}
    dropped: list[str] = []
    for r in rows:
        what = f"{r.result_id} {r.benchmark} {r.scenario}"
        if r.accelerator_raw.strip() and r.total_accelerators <= 0:
            dropped.append(f"{what}: accelerator {r.accelerator_raw!r} without a count")
            continue
        key = (r.round, r.result_id, r.benchmark, r.scenario, r.division)
        if key in kept:
            first = kept[key].value
            dropped.append(f"{what}: repeats an earlier row's key ({first:g} kept)")
            continue
        kept[key] = r
    return list(kept.values()), dropped


def _number(value: object) -> float | None:
    """A finite number of the file or None; booleans read as 0/1 (``inferred``)."""
    return float(value) if isinstance(value, bool) else summary_number(value)


def _total_accelerators(r: dict[str, Any]) -> int:
    total = _number(r.get("Total Accelerators"))
    if total:
        return int(total)
    counts = _HETERO.findall(str(r.get("Accelerator") or ""))
    if counts:  # heterogeneous systems: "MI300X (x32), MI325X (x16)"
        return sum(int(c) for c in counts)
    per_node = _number(r.get("a#")) or 0.0
    return round(per_node * (_number(r.get("Nodes")) or 1.0))


def _power(r: dict[str, Any]) -> tuple[float | None, float | None]:
    value = _number(r.get("Power_Result"))
    unit = str(r.get("Power_Units") or "").lower()
    if value is None:
        return None, None
    if unit == "watts":
        return value, None
    if unit == "millijoules":
        return None, value
    return None, None


def _round_from_id(result_id: str) -> str:
    return result_id.split("-", 1)[0] if "-" in result_id else ""


def _flag_duplicates(rows: list[PublishedResult]) -> list[PublishedResult]:
    """Mark a -99.9 row that repeats its -99 sibling's figure (the same run)."""
    seen = {
        (r.round, r.result_id, r.base_benchmark, r.scenario, r.value)
        for r in rows
        if r.benchmark.endswith("-99")
    }
    out = []
    for r in rows:
        key = (r.round, r.result_id, r.base_benchmark, r.scenario, r.value)
        if r.benchmark.endswith("-99.9") and key in seen:
            r = dataclasses.replace(r, duplicate=True)
        out.append(r)
    return out


def _flag_units(rows: Iterable[PublishedResult]) -> list[PublishedResult]:
    """Flag rows whose unit differs from the usual one of their benchmark and scenario.

    LLM rows are reported in Tokens/s; a row of the same benchmark in Samples/s
    or Queries/s is a known unit bug (spec 1.5, gotcha 4). The value is kept as
    published; the flag keeps it out of default comparisons.
    """
    rows = list(rows)
    units: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in rows:
        units[(r.base_benchmark, r.scenario)].add(r.unit)
    token_benchmarks = {b for (b, _), u in units.items() if "tokens/s" in u}
    out = []
    for r in rows:
        if r.base_benchmark in token_benchmarks and r.unit in {
            "samples/s",
            "queries/s",
        }:
            note = f"unit {r.unit} on a token benchmark (likely tokens/s)"
            r = dataclasses.replace(r, flags=_join(r.flags, note))
        if r.unit == "?":
            r = dataclasses.replace(r, flags=_join(r.flags, "unknown unit"))
        out.append(r)
    return out


def _join(flags: str, note: str) -> str:
    return f"{flags}; {note}" if flags else note
