"""A run beside published rows of the same benchmark and scenario.

Follows the MLCommons results guidelines: every published figure carries a
footnote (round, division, scenario, result ID, retrieval date); our run is an
"unverified infermeter result"; per-accelerator and % figures are derived.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from infermeter.errors import ConfigError
from infermeter.results.accelerators import known_parts, normalise
from infermeter.results.published import PublishedResult
from infermeter.results.runfolder import RunFolder

UNVERIFIED = "unverified infermeter result"
DERIVED_NOTE = (
    "Per-accelerator figures and '% of published' are derived, not MLPerf metrics."
)
RUN_NOTE = (
    "Unverified infermeter result: not verified by MLCommons Association; "
    "not an MLPerf result."
)
# Real deployments are said to reach 60-80 % of MLPerf figures (issue 6).
DEPLOYMENT_BAND = (60.0, 80.0)


@dataclass(frozen=True, slots=True)
class RunFigure:
    """The run's headline figure in the unit published rows use."""

    run_id: str
    benchmark: str
    scenario: str
    value: float
    unit: str
    accelerators: int | None = None
    accelerator: str | None = None
    label: str = UNVERIFIED

    @property
    def per_accelerator(self) -> float | None:
        if not self.accelerators or self.unit == "ms":
            return None
        return self.value / self.accelerators


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    published: PublishedResult
    footnote: int
    pct_of_published: float
    pct_per_accelerator: float | None


@dataclass(frozen=True)
class Comparison:
    run: RunFigure
    rows: list[ComparisonRow]
    footnotes: list[str]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": {
                **{k: getattr(self.run, k) for k in RunFigure.__slots__},
                "per_accelerator": self.run.per_accelerator,
            },
            "rows": [
                {
                    **row.published.as_dict(),
                    "per_accelerator": row.published.per_accelerator,
                    "per_joule": row.published.per_joule,
                    "pct_of_published": row.pct_of_published,
                    "pct_per_accelerator": row.pct_per_accelerator,
                    "footnote": row.footnote,
                    "derived": ["per_accelerator", "per_joule", "pct_of_published"],
                }
                for row in self.rows
            ],
            "footnotes": self.footnotes,
            "notes": self.notes,
        }


def run_figure(
    run: RunFolder, *, gpu: str | None = None, gpus: int | None = None
) -> RunFigure:
    """The run's figure: tokens/s for LLM runs, else samples/s, queries/s or ms."""
    m = run.metrics
    value, unit = _headline(run.scenario, m, run.is_token_run)
    name, count = _run_gpu(run.meta.get("environment"), gpu, gpus)
    return RunFigure(run.run_id, run.benchmark, run.scenario, value, unit, count, name)


def _headline(scenario: str, m: dict[str, Any], tokens: bool) -> tuple[float, str]:
    latency = m.get("latency_ns") or {}
    if scenario in ("SingleStream", "MultiStream"):
        key = "p90" if scenario == "SingleStream" else "p99"
        if key not in latency:
            raise ConfigError(f"The run has no {key} latency to compare.")
        return float(latency[key]) / 1e6, "ms"
    if tokens and m.get("tokens_per_second"):
        return float(m["tokens_per_second"]), "tokens/s"
    if scenario == "Server":
        return float(m.get("samples_per_second") or 0.0), "queries/s"
    return float(m.get("samples_per_second") or 0.0), "samples/s"


def _run_gpu(
    env: object, gpu: str | None, gpus: int | None
) -> tuple[str | None, int | None]:
    """The run's accelerator: flags win, else run.json environment.gpu."""
    if gpus is not None and gpus < 1:  # 0 would read as "not given" below
        raise ConfigError(f"--gpus must be >= 1 (got {gpus}).")
    found = env.get("gpu") if isinstance(env, dict) else None
    name, count = gpu, gpus
    if isinstance(found, dict):
        name = name or found.get("name")
        count = count or found.get("count")
    elif isinstance(found, list) and found:
        first = found[0]
        name = name or (first.get("name") if isinstance(first, dict) else str(first))
        count = count or len(found)
    elif isinstance(found, str) and found:
        name, count = name or found, count or 1
    return (normalise(name).name if name else None), (int(count) if count else None)


def select_published(
    rows: Sequence[PublishedResult],
    figure: RunFigure,
    *,
    ids: Sequence[str] = (),
    accelerator: str | None = None,
    include_open: bool = False,
    limit: int = 10,
) -> tuple[list[PublishedResult], list[str]]:
    """Rows of the same benchmark, scenario and unit; notes say what was left out."""
    base = figure.benchmark.removesuffix("-99.9").removesuffix("-99")
    same = [
        r for r in rows if r.base_benchmark == base and r.scenario == figure.scenario
    ]
    notes = []
    if ids:
        wanted = {i.removeprefix("v") for i in ids}
        same = [r for r in same if r.result_id.removeprefix("v") in wanted]
    flagged = [r for r in same if r.flags]
    if flagged:
        notes.append(f"{len(flagged)} row(s) left out: {flagged[0].flags}.")
    keep = [
        r for r in same if not r.duplicate and not r.flags and r.unit == figure.unit
    ]
    if not include_open and not ids:
        keep = [r for r in keep if r.division == "closed"]
    if accelerator:
        key = normalise(accelerator).slug
        keep = [r for r in keep if normalise(r.accelerator_raw).slug == key]
    keep.sort(key=lambda r: r.value, reverse=figure.unit != "ms")
    return keep[:limit], notes


def check_part(name: str, rows: Sequence[PublishedResult]) -> None:
    """A one-line error for a user's part that has no spec and no published row."""
    key, known = normalise(name).slug, known_parts()
    if key in known or any(normalise(r.accelerator_raw).slug == key for r in rows):
        return
    raise ConfigError(f"Unknown accelerator {name!r}. Known: {', '.join(known)}.")


def compare(
    figure: RunFigure,
    rows: Sequence[PublishedResult],
    *,
    ids: Sequence[str] = (),
    accelerator: str | None = None,
    include_open: bool = False,
    limit: int = 10,
) -> Comparison:
    """Place the run's figure beside the selected published rows."""
    chosen, notes = select_published(
        rows,
        figure,
        ids=ids,
        accelerator=accelerator,
        include_open=include_open,
        limit=limit,
    )
    out, footnotes = [], []
    for number, row in enumerate(chosen, start=1):
        out.append(_row(figure, row, number))
        footnotes.append(f"[{number}] {footnote(row)}")
    if not chosen:
        of = f" of {normalise(accelerator).slug}" if accelerator else ""
        notes.append(
            f"No published {figure.benchmark} {figure.scenario} rows{of} in "
            f"{figure.unit}; import a round that has some with 'infermeter results "
            "import FILE'" + (", or drop --accelerator." if accelerator else ".")
        )
    notes += [_band_note(out), DERIVED_NOTE, f"{figure.run_id}: {RUN_NOTE}"]
    if figure.unit == "ms":
        notes.append("Latency: '% of published' = published / run (higher is better).")
    return Comparison(figure, out, footnotes, [n for n in notes if n])


def _row(figure: RunFigure, row: PublishedResult, number: int) -> ComparisonRow:
    if figure.unit == "ms":
        pct = row.value / figure.value * 100.0 if figure.value else 0.0
        return ComparisonRow(row, number, pct, None)
    pct = figure.value / row.value * 100.0
    mine, theirs = figure.per_accelerator, row.per_accelerator
    per_acc = mine / theirs * 100.0 if mine is not None and theirs else None
    return ComparisonRow(row, number, pct, per_acc)


def _band_note(rows: list[ComparisonRow]) -> str:
    values = [r.pct_per_accelerator or r.pct_of_published for r in rows]
    if not values:
        return ""
    best = max(values)
    low, high = DEPLOYMENT_BAND
    where = "below" if best < low else "within" if best <= high else "above"
    return (
        f"Best match: {best:.1f} % of published (derived); {where} the {low:.0f}-"
        f"{high:.0f} % that real deployments are said to reach."
    )


def footnote(row: PublishedResult) -> str:
    """The footnote the MLCommons results guidelines ask for, for one row."""
    preview = " (preview)" if row.preview else ""
    suite = row.suite.title() if row.suite else "Inference"
    return (
        f"MLPerf Inference {row.round} {suite}, {row.division} division, "
        f"{row.benchmark} {row.scenario}, result ID {row.result_id}{preview}: "
        f"{row.submitter} {row.system}, {row.total_accelerators}x "
        f"{row.accelerator_raw or 'CPU'}. Retrieved {row.retrieved_at} from "
        f"{row.source}."
    )


def comparison_json(comparison: Comparison) -> str:
    return json.dumps(comparison.as_dict(), indent=2, sort_keys=True)
