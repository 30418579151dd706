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
from infermeter.perfmodel.specs import get_accelerator
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
# SUTs that run the model on the machine the run records (run.json environment).
HOST_SUTS = ("torch_llm", "onnxruntime")
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
    best: float | None = None  # best_match(): the figure every surface quotes

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
                    "system_name": system_name(row.published),
                    "footnote": row.footnote,
                    "derived": ["per_accelerator", "per_joule", "pct_of_published"],
                }
                for row in self.rows
            ],
            "footnotes": self.footnotes,
            "notes": self.notes,
            "best_match_pct": self.best,
        }


def run_figure(
    run: RunFolder, *, gpu: str | None = None, gpus: int | None = None
) -> RunFigure:
    """The run's figure: tokens/s for LLM runs, else samples/s, queries/s or ms."""
    m = run.metrics
    value, unit = _headline(run.scenario, m, run.is_token_run)
    sim_name, sim_count = simulated_system(run.meta)
    sut = run.meta.get("sut")
    kind = sut.get("kind") if isinstance(sut, dict) else None
    # The host's GPUs are the SUT's only for SUTs that run on the host; an
    # endpoint's (a mock, a fleet, a remote server) are not known here.
    env = run.meta.get("environment") if kind in HOST_SUTS else None
    name, count = _run_gpu(
        env, gpu or sim_name, gpus if gpus is not None else sim_count
    )
    label = f"{UNVERIFIED}, simulated" if sim_name else UNVERIFIED
    return RunFigure(
        run.run_id, run.benchmark, run.scenario, value, unit, count, name, label
    )


def simulated_system(meta: dict[str, Any]) -> tuple[str | None, int | None]:
    """The part and count a ``sim`` run simulates (its options, as the run
    recorded them); (None, None) for any other SUT: its hardware is the host's."""
    sut = meta.get("sut")
    if not isinstance(sut, dict) or sut.get("kind") != "sim":
        return None, None
    params = sut.get("params")
    if not isinstance(params, dict) or not params.get("accelerator"):
        return None, None
    try:
        count = int(params.get("count") or 0) or None
        return get_accelerator(str(params["accelerator"])).name, count
    except (TypeError, ValueError, ConfigError):
        return None, None


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
    return keep[:limit] if limit else keep, notes


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
    # Every matching row, not the first ``limit``: the best match must not
    # depend on how many rows a surface shows.
    chosen, notes = select_published(
        rows,
        figure,
        ids=ids,
        accelerator=accelerator,
        include_open=include_open,
        limit=0,
    )
    out, footnotes = [], []
    for number, row in enumerate(chosen[:limit], start=1):
        out.append(_row(figure, row, number))
        footnotes.append(f"[{number}] {footnote(row)}")
    if not chosen:
        of = f" of {normalise(accelerator).slug}" if accelerator else ""
        notes.append(
            f"No published {figure.benchmark} {figure.scenario} rows{of} in "
            f"{figure.unit}; import a round that has some with 'infermeter results "
            "import FILE'" + (", or drop --accelerator." if accelerator else ".")
        )
    best = best_match(figure, chosen)
    notes += [_band_note(best), DERIVED_NOTE, f"{figure.run_id}: {RUN_NOTE}"]
    if figure.unit == "ms":
        notes.append("Latency: '% of published' = published / run (higher is better).")
    return Comparison(figure, out, footnotes, [n for n in notes if n], best)


def _row(figure: RunFigure, row: PublishedResult, number: int) -> ComparisonRow:
    if figure.unit == "ms":
        pct = row.value / figure.value * 100.0 if figure.value else 0.0
        return ComparisonRow(row, number, pct, None)
    pct = figure.value / row.value * 100.0
    mine, theirs = figure.per_accelerator, row.per_accelerator
    per_acc = mine / theirs * 100.0 if mine is not None and theirs else None
    return ComparisonRow(row, number, pct, per_acc)


def best_match(figure: RunFigure, rows: Sequence[PublishedResult]) -> float | None:
    """The one "% of published" figure every surface quotes (derived), over
    ``rows`` as ``select_published`` chose them (every row, not the shown ones).

    Like for like: the best published row of the run's own part and size,
    whole system against whole system; without one, per accelerator against
    rows of the run's part. None where the run's part is not known (a mock, a
    fleet, a host without a GPU found): a percentage of an unrelated system
    says nothing.
    """
    if not figure.accelerator or not figure.value:
        return None
    slug = normalise(figure.accelerator).slug
    mine = [r for r in rows if normalise(r.accelerator_raw).slug == slug]
    same = [r for r in mine if r.total_accelerators == figure.accelerators]
    if same:
        return max(_row(figure, r, 0).pct_of_published for r in same)
    values = [_row(figure, r, 0).pct_per_accelerator for r in mine]
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _band_note(best: float | None) -> str:
    if best is None:
        return ""
    low, high = DEPLOYMENT_BAND
    where = "below" if best < low else "within" if best <= high else "above"
    return (
        f"Best match: {best:.1f} % of published (derived); {where} the {low:.0f}-"
        f"{high:.0f} % that real deployments are said to reach."
    )


def system_name(row: PublishedResult) -> str:
    """Submitter and system, the submitter once ("NVIDIA DGX H100", not
    "NVIDIA NVIDIA DGX H100")."""
    if row.system.lower().startswith(row.submitter.lower()):
        return row.system
    return f"{row.submitter} {row.system}".strip()


def footnote(row: PublishedResult) -> str:
    """The footnote the MLCommons results guidelines ask for, for one row."""
    preview = " (preview)" if row.preview else ""
    suite = row.suite.title() if row.suite else "Inference"
    return (
        f"MLPerf Inference {row.round} {suite}, {row.division} division, "
        f"{row.benchmark} {row.scenario}, result ID {row.result_id}{preview}: "
        f"{system_name(row)}, {row.total_accelerators}x "
        f"{row.accelerator_raw or 'CPU'}. Retrieved {row.retrieved_at} from "
        f"{row.source}."
    )


def comparison_json(comparison: Comparison) -> str:
    return json.dumps(comparison.as_dict(), indent=2, sort_keys=True)
