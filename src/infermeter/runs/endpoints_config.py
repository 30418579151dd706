"""Read the reference client's YAML benchmark config, to run it on infermeter's engine.

The reference client (``inference-endpoint benchmark from-config``, mlcommons/endpoints)
describes one point per file: ``endpoint_config.endpoints``, ``model_params.name`` and
``max_new_tokens``, ``datasets`` (the ``performance`` one: ``path``, ``samples``),
``settings.runtime`` (``min_duration_ms``, ``scheduler_random_seed``,
``dataloader_random_seed``) and ``settings.load_pattern`` (``type: concurrency``,
``target_concurrency``). A curve is several files that agree on the endpoint, the
model and the dataset. Seeds equal to a published set's bind the run to it. A dataset
path is read as JSONL rows with a ``prompt`` string (the reference's default field);
without one, prompts are synthetic. PyYAML reads the file
(``pip install 'infermeter[endpoints]'``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError, MissingDependencyError, PathError
from infermeter.runs.endpoints_rules import SEED_SETS
from infermeter.suts.prompts import Prompt


@dataclass(frozen=True, slots=True)
class ReferenceConfig:
    """The facts of one reference-client config that infermeter's run takes."""

    path: Path
    url: str  # base URL with /v1, as infermeter's HTTP SUT takes it
    model: str
    concurrency: int
    min_duration_ms: int
    max_new_tokens: int | None
    dataset: Path | None
    samples: int | None
    seed_set: str | None
    seed: int
    # the accuracy dataset, when it is JSONL scored by ROUGE (the one scorer shared)
    accuracy_file: Path | None = None
    accuracy_reference: str | None = None
    accuracy_name: str | None = None


def read_config(path: Path) -> ReferenceConfig:
    """One file; a field infermeter cannot run is a one-line error naming it."""
    doc = _load(path)
    pattern = _get(doc, "settings", "load_pattern") or {}
    if pattern.get("type") != "concurrency":
        raise ConfigError(
            f"{path}: settings.load_pattern.type is {pattern.get('type')!r}; MLPerf "
            "Endpoints points are 'concurrency' (§6.1), the only type read here."
        )
    level = pattern.get("target_concurrency")
    if not isinstance(level, int) or level < 1:
        raise ConfigError(
            f"{path}: settings.load_pattern.target_concurrency must be >= 1."
        )
    endpoints = _get(doc, "endpoint_config", "endpoints") or []
    model = _get(doc, "model_params", "name")
    if not endpoints or not model:
        raise ConfigError(
            f"{path}: needs endpoint_config.endpoints and model_params.name."
        )
    runtime = _get(doc, "settings", "runtime") or {}
    perf: dict[str, Any] = next(
        (d for d in doc.get("datasets") or [] if d.get("type") == "performance"), {}
    )
    seeds = (
        runtime.get("scheduler_random_seed"),
        runtime.get("dataloader_random_seed"),
    )
    return ReferenceConfig(
        path=path,
        url=_v1(str(endpoints[0])),
        model=str(model),
        concurrency=level,
        min_duration_ms=int(runtime.get("min_duration_ms", 600_000)),
        max_new_tokens=_get(doc, "model_params", "max_new_tokens"),
        dataset=(path.parent / perf["path"]) if perf.get("path") else None,
        samples=perf.get("samples"),
        seed_set=_bound(seeds),
        seed=int(seeds[1] or 0) % 2**32,
        **_accuracy(doc, path),
    )


def _accuracy(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """The ``accuracy`` dataset infermeter can run: a path, ROUGE scoring
    (``accuracy_config.eval_method: rouge``); its reference column is
    ``accuracy_config.ground_truth`` (the reference's default: ``ground_truth``)."""
    acc: dict[str, Any] = next(
        (d for d in doc.get("datasets") or [] if d.get("type") == "accuracy"), {}
    )
    config = acc.get("accuracy_config") or {}
    if not acc.get("path") or config.get("eval_method") != "rouge":
        return {}
    return {
        "accuracy_file": path.parent / acc["path"],
        "accuracy_reference": config.get("ground_truth") or "ground_truth",
        "accuracy_name": acc.get("name"),
    }


def _load(path: Path) -> dict[str, Any]:
    try:
        import yaml
    except ImportError:
        raise MissingDependencyError("pyyaml", "endpoints") from None
    if not path.is_file():
        raise PathError(f"--config {path}: no such file.")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"--config {path}: not YAML ({str(exc).splitlines()[0]})."
        ) from None
    if not isinstance(doc, dict):
        raise ConfigError(f"--config {path}: not a YAML mapping.")
    return doc


def _get(doc: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None  # type: ignore[assignment]
    return doc


def _v1(url: str) -> str:
    """The reference takes ``http://host:port`` and adds the API path; we take /v1."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def _bound(seeds: tuple[Any, Any]) -> str | None:
    """The published set whose scheduler and sample-index seeds these are, if any."""
    for name, published in SEED_SETS.items():
        if seeds == (
            published["scheduler_rng_seed"],
            published["sample_index_rng_seed"],
        ):
            return name
    return None


def curve_of(configs: list[ReferenceConfig]) -> ReferenceConfig:
    """The facts every file of a curve must share (the first file's)."""
    first = configs[0]
    for c in configs[1:]:
        for name in ("url", "model", "dataset", "seed_set", "max_new_tokens"):
            if getattr(c, name) != getattr(first, name):
                raise ConfigError(
                    f"{c.path}: {name} {getattr(c, name)!r} differs from {first.path}'s "
                    f"{getattr(first, name)!r}; one curve is one endpoint, model and dataset."
                )
    return first


def prompt_rows(
    path: Path, what: str, hint: str = ""
) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a JSONL file, each with a ``prompt`` string, and their line
    numbers; ``what`` names the file in errors (``hint`` after "no such file")."""
    if not path.is_file():
        raise PathError(f"{what} {path}: no such file{hint}.")
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise ConfigError(
                f"{what} {path}, line {n}: not a JSON row with a 'prompt' string."
            )
        rows.append((n, row))
    if not rows:
        raise ConfigError(f"{what} {path}: no rows.")
    return rows


class JsonlPrompts:
    """Prompts of a JSONL file: each row's ``prompt`` string, ``max_tokens`` each."""

    def __init__(self, path: Path, max_tokens: int) -> None:
        rows = prompt_rows(path, "dataset", " (datasets[].path of the config)")
        self.texts: list[str] = [row["prompt"] for _, row in rows]
        self.max_tokens = max_tokens

    def __len__(self) -> int:
        return len(self.texts)

    def prompt(self, index: int) -> Prompt:
        return Prompt(
            text=self.texts[index % len(self.texts)], max_tokens=self.max_tokens
        )
