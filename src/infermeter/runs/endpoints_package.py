"""``infermeter endpoints package``: the §8.1 submission tree from stored curve points.

::

    <out>/<org>/<submission_id>/
      src/infermeter/README.md         how the points were run (edit: your SUT's build)
      docs/README.md                   the fields left to fill in
      results/<system>/<model>/r<N>/   point.yaml, config.yaml, result_summary.json,
                                       system_desc.json, accuracy_results.json (§6.6)

Points come from ``infermeter sweep --concurrency`` or ``infermeter endpoints run``
folders (``NN_cK/performance/result_summary.json``); a point's accuracy pass
(``NN_cK/accuracy/accuracy_results.json``, ``endpoints run --accuracy-file`` or the
reference client's) goes beside its point.yaml. A rate or trace point is not a
fixed-concurrency point (§6.1) and is refused. The tree is built beside the target
and moved into place, so a refused package writes nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.runs.endpoints_accuracy import RESULTS_FILE
from infermeter.runs.endpoints_files import (
    FILL_IN_MARK,
    SIDECAR,
    config_yaml,
    point_yaml,
    summary_for_checker,
    system_desc,
    to_yaml,
)
from infermeter.runs.endpoints_rules import (
    SEED_SETS,
    Regions,
    accuracy_levels,
    check_points,
)


@dataclass(frozen=True, slots=True)
class PackageRequest:
    """What goes into the tree, and the names the submitter chose."""

    sources: list[Path]
    out: Path
    org: str = "my_org"
    submission_id: str = "submission_1"
    system: str = "my_system"
    model_name: str = "my_model"
    dataset: str = "my_dataset"
    division: str = "RDI"  # Standardized needs system_power.json (§4.5.2)
    c_max: int | None = None  # default: the highest point
    seed_set: str | None = None  # only when the runs were bound to it
    endpoint_url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoredPoint:
    """One fixed-concurrency point as stored by a sweep or an endpoints run."""

    concurrency: int
    summary: dict[str, Any]
    folder: Path

    @property
    def block(self) -> dict[str, Any]:
        """infermeter's block: in the summary, or beside a reference client's run."""
        side = self.folder / SIDECAR
        if "infermeter" not in self.summary and side.is_file():
            return dict(json.loads(side.read_text(encoding="utf-8")))
        return dict(self.summary.get("infermeter") or {})

    @property
    def accuracy(self) -> Path | None:
        """The point's accuracy pass (§6.6), if one ran."""
        path = self.folder / "accuracy" / RESULTS_FILE
        return path if path.is_file() else None

    @property
    def endpoints(self) -> dict[str, Any]:
        """What ``endpoints run`` recorded (warmup, window, seed set); {} for a sweep."""
        return dict(self.block.get("endpoints") or {})


def read_points(sources: list[Path]) -> list[StoredPoint]:
    """Every point under the given folders; a non-concurrency point is refused."""
    found: list[StoredPoint] = []
    for source in sources:
        files = sorted(source.glob("*/performance/result_summary.json"))
        if not files:
            raise ConfigError(
                f"{source}: no NN_cK/performance/result_summary.json here; give the "
                "--out folder of 'infermeter sweep --concurrency' or 'endpoints run'."
            )
        found.extend(_stored(f) for f in files)
    seen: dict[int, Path] = {}
    for p in found:
        if p.concurrency in seen:
            raise ConfigError(
                f"concurrency {p.concurrency} is stored twice ({seen[p.concurrency]} and "
                f"{p.folder}); give one folder per level."
            )
        seen[p.concurrency] = p.folder
    return sorted(found, key=lambda p: p.concurrency)


def _stored(path: Path) -> StoredPoint:
    summary = json.loads(path.read_text(encoding="utf-8"))
    load = _load_spec(summary.get("run_config") or {})
    if load.get("mode") != "concurrency":
        raise ConfigError(
            f"{path.parent.parent.name}: a {load.get('mode', 'unknown')!r} point; MLPerf "
            "Endpoints takes fixed-concurrency points only (§6.1): sweep --concurrency."
        )
    return StoredPoint(int(load["concurrency"]), summary, path.parent.parent)


def _load_spec(config: dict[str, Any]) -> dict[str, Any]:
    """infermeter's load spec, or the reference client's load pattern read as one."""
    if "load" in config:
        return dict(config["load"] or {})
    # result_summary.json's run_config holds it at the top; config.yaml under settings
    pattern = (
        config.get("load_pattern")
        or (config.get("settings") or {}).get("load_pattern")
        or {}
    )
    if pattern.get("type") == "concurrency":
        return {"mode": "concurrency", "concurrency": pattern.get("target_concurrency")}
    return {"mode": pattern.get("type", "unknown")}


def package(request: PackageRequest) -> Path:
    """Write the tree; returns ``<out>/<org>/<submission_id>``."""
    _check_names(request)
    points = read_points(request.sources)
    levels = [p.concurrency for p in points]
    c_max = request.c_max or max(levels)
    regions = check_points(levels, c_max)
    root = request.out / request.org / request.submission_id
    if root.exists():
        raise ConfigError(f"{root} exists; give another --out or --submission-id.")
    request.out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".package-", dir=request.out))
    try:
        _write_tree(staging, request, points, regions)
        root.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def _write_tree(
    root: Path, request: PackageRequest, points: list[StoredPoint], regions: Regions
) -> None:
    meta = _meta(request, points)
    curve = root / "results" / request.system / request.model_name
    desc = system_desc(meta, regions.c_max)
    for p in points:
        folder = curve / f"r{p.concurrency}"
        folder.mkdir(parents=True)
        stored = _point_facts(p)
        (folder / "point.yaml").write_text(to_yaml(point_yaml(stored, regions, meta)))
        ran = p.folder / "config.yaml"  # the reference client's own, shipped as written
        if ran.is_file():
            shutil.copyfile(ran, folder / "config.yaml")
        else:
            (folder / "config.yaml").write_text(to_yaml(config_yaml(stored, meta)))
        _json(folder / "result_summary.json", summary_for_checker(p.summary))
        _json(folder / "system_desc.json", desc)
        if p.accuracy is not None:
            shutil.copyfile(p.accuracy, folder / RESULTS_FILE)
    _readmes(root, request, points, _accuracy_note(points, regions))


def _meta(request: PackageRequest, points: list[StoredPoint]) -> dict[str, Any]:
    bound = {p.endpoints.get("seed_set") for p in points}
    if request.seed_set and bound != {request.seed_set}:
        raise ConfigError(
            f"--seed-set {request.seed_set}: the points were run with seed sets "
            f"{sorted(str(b) for b in bound)}; run them with 'endpoints run --seed-set "
            f"{request.seed_set}' (or leave --seed-set out: the tree says unbound)."
        )
    samples = {p.endpoints.get("dataset_size") for p in points} - {None}
    return {
        "system": request.system,
        "model_name": request.model_name,
        "dataset": request.dataset,
        "division": request.division,
        "seed_set": request.seed_set,
        "endpoint_url": request.endpoint_url,
        "samples": samples.pop() if len(samples) == 1 else None,
        **request.extra,
    }


def _point_facts(p: StoredPoint) -> dict[str, Any]:
    """Concurrency, warmup, window and steady state, from what the run stored."""
    load = _load_spec(p.summary.get("run_config") or {})
    run = p.endpoints
    warm_n = int(load.get("warmup_requests") or 0)
    warmup = run.get("warmup") or {
        "duration_s": 0.0,
        "requests_issued": warm_n,
        "requests_completed": warm_n,
        "data_source": "the performance dataset's first prompts",
        "concurrency": p.concurrency if warm_n else 0,
        "logs_retained": False,
    }
    return {
        "concurrency": p.concurrency,
        "warmup": warmup,
        "steady_state": run.get("steady_state"),
        "window_s": run.get(
            "target_window_s", float(p.summary.get("duration_ns", 0)) / 1e9
        ),
        "load": load,
    }


def _accuracy_note(points: list[StoredPoint], regions: Regions) -> str:
    """What the tree holds of §5.3's N accuracy results, in one line."""
    have = [p.concurrency for p in points if p.accuracy is not None]
    levels = [p.concurrency for p in points]
    wanted = accuracy_levels(levels, regions)
    named = ", ".join(f"r{c}" for c in wanted)
    if not have:
        return (
            f"Accuracy runs are not in this tree: run them at {named} "
            "('infermeter endpoints run --accuracy-file FILE').\n"
        )
    missing = [c for c in wanted if c not in have]
    extra = [c for c in have if c not in wanted]
    note = f"Accuracy results (§6.6) at {', '.join(f'r{c}' for c in have)}"
    if missing:
        note += f"; missing at {', '.join(f'r{c}' for c in missing)}"
    if extra:  # the checker may still match them to bands; say what was expected
        note += f"; §5.3's choice would be {named}"
    return note + ".\n"


def _readmes(
    root: Path, request: PackageRequest, points: list[StoredPoint], accuracy: str
) -> None:
    src = root / "src" / "infermeter"
    src.mkdir(parents=True)
    levels = ",".join(str(p.concurrency) for p in points)
    (src / "README.md").write_text(
        "# How these points were run\n\n"
        "With infermeter (infermeter results, unverified; the official points are the\n"
        "reference client's):\n\n"
        f"    infermeter endpoints run --url URL --model {request.model_name} "
        f"--concurrency {levels}\n\n"
        f"{FILL_IN_MARK}: how to build and start the system under test.\n",
        encoding="utf-8",
    )
    docs = root / "docs"
    docs.mkdir()
    (docs / "README.md").write_text(
        "# Left for the submitter\n\n"
        f"Every field whose value starts with `{FILL_IN_MARK}` (find them with\n"
        f"`grep -rn {FILL_IN_MARK} .`), and the numeric fields written as 0 in\n"
        "system_desc.json (host_processor_core_count, accelerators_per_node).\n"
        + accuracy,
        encoding="utf-8",
    )


def _check_names(request: PackageRequest) -> None:
    for flag, value in (
        ("--org", request.org),
        ("--submission-id", request.submission_id),
        ("--system", request.system),
        ("--model-name", request.model_name),
    ):
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", value) or value in (".", ".."):
            raise ConfigError(
                f"{flag} {value!r}: use letters, digits, '_', '-' or '.' (a folder name)."
            )
    if request.seed_set and request.seed_set not in SEED_SETS:
        raise ConfigError(
            f"--seed-set {request.seed_set!r} is not a published set "
            f"(known: {', '.join(SEED_SETS)})."
        )


def _json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
