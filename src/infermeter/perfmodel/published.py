"""Published MLPerf LLM rows (Offline/Server tokens/s) for calibration, with their IDs.

Reads the v4.1 ``summary_results.json`` in place when present (closed,
datacenter, Tokens/s rows of the LLM benchmarks; ``-99``/``-99.9`` duplicates
merged, accelerators per node times nodes), else a built-in table of headline
rows. Precision is inferred from the software stack, never from
``weight_data_types`` (spec section 1.5, gotcha 1).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from infermeter.errors import DatasetError, DatasetPathError
from infermeter.perfmodel.specs import Accelerator, match_accelerator

V41_RELATIVE = Path("..") / "shared" / "data" / "mlperf" / "summary_results_v4.1.json"
_BENCHMARKS = {
    "llama2-70b": "llama2-70b",
    "mixtral-8x7b": "mixtral-8x7b",
    "gptj": "gptj-6b",
}


@dataclass(frozen=True, slots=True)
class PublishedRow:
    """One published LLM result: a system, a benchmark, a scenario, output tokens/s."""

    result_id: str
    submitter: str
    accelerator: str
    count: int
    benchmark: str
    scenario: str
    tokens_per_s: float
    stack: str
    precision: str
    software: str

    @property
    def group(self) -> tuple[str, str, str]:
        """The calibration group: (accelerator, software stack, precision)."""
        return (self.accelerator, self.stack, self.precision)

    @property
    def label(self) -> str:
        return f"{self.result_id} {self.count}x{self.accelerator} {self.benchmark} {self.scenario}"


def stack_of(software: str) -> str:
    """Normalise the ``Software`` field to a serving stack name."""
    text = software.lower()
    if "tensorrt" in text:
        return "trt-llm"
    if "vllm" in text:
        return "vllm"
    return "other"


def infer_precision(acc: Accelerator, stack: str, declared: str) -> str:
    """Runtime precision: TRT-LLM rows ran the lowest precision the part has (FP8 on
    Hopper/Ada, FP4 on Blackwell, per NVIDIA's configs); others as declared."""
    if stack == "trt-llm":
        for p in ("fp4", "fp8"):
            if acc.supports(p):
                return p
        return "fp16"
    declared = declared.lower()
    return (
        declared
        if declared in ("fp8", "fp16", "bf16") and acc.supports(declared)
        else "fp16"
    )


def _benchmark(model: str) -> str | None:
    for prefix, key in _BENCHMARKS.items():
        if model.startswith(prefix):
            return key
    return None


def _row_from_json(r: dict[str, Any]) -> PublishedRow | None:
    if (r.get("Category"), r.get("Suite"), r.get("Performance_Units")) != (
        "closed",
        "datacenter",
        "Tokens/s",
    ) or r.get("Scenario") not in ("Offline", "Server"):
        return None
    bench = _benchmark(str(r.get("Model", "")))
    acc = match_accelerator(str(r.get("Accelerator", "")))
    try:
        count = int(float(r["a#"]) * int(r.get("Nodes", 1) or 1))
        value = float(r["Performance_Result"])
    except (KeyError, TypeError, ValueError):
        return None  # CPU-only rows have a# == ""
    if bench is None or acc is None or count < 1:
        return None
    stack = stack_of(str(r.get("Software", "")))
    return PublishedRow(
        result_id=str(r["ID"]),
        submitter=str(r.get("Submitter", "")),
        accelerator=acc.key,
        count=count,
        benchmark=bench,
        scenario=str(r["Scenario"]),
        tokens_per_s=value,
        stack=stack,
        precision=infer_precision(acc, stack, str(r.get("weight_data_types", ""))),
        software=str(r.get("Software", "")),
    )


def read_summary_json(path: Path) -> list[PublishedRow]:
    """LLM rows of a ``summary_results.json``; -99/-99.9 duplicates merged."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(
            f"Cannot read published results {str(path)!r}: {exc}."
        ) from None
    seen: dict[tuple[str, str, str], PublishedRow] = {}
    for raw in data:
        row = _row_from_json(raw)
        if row is not None:
            seen.setdefault((row.result_id, row.benchmark, row.scenario), row)
    return sorted(seen.values(), key=lambda r: (r.result_id, r.benchmark, r.scenario))


def builtin_rows() -> list[PublishedRow]:
    """The built-in table of headline v4.1 rows (used when the JSON is absent)."""
    text = (
        resources.files("infermeter.perfmodel")
        .joinpath("data")
        .joinpath("published_v4.1.toml")
        .read_text()
    )
    rows = []
    for rid, sub, raw_acc, count, bench, sw, declared, off, srv in tomllib.loads(text)[
        "rows"
    ]:
        acc = match_accelerator(raw_acc)
        if acc is None:
            continue
        stack = stack_of(sw)
        prec = infer_precision(acc, stack, declared)
        for scenario, value in (("Offline", off), ("Server", srv)):
            rows.append(
                PublishedRow(
                    rid,
                    sub,
                    acc.key,
                    int(count),
                    bench,
                    scenario,
                    float(value),
                    stack,
                    prec,
                    sw,
                )
            )
    return rows


def default_summary_path(repo_root: Path | None = None) -> Path:
    """Where the v4.1 file lives relative to a checkout (read in place, never copied)."""
    root = repo_root if repo_root is not None else Path(__file__).resolve().parents[3]
    return (root / V41_RELATIVE).resolve()


def load_rows(path: Path | None = None) -> tuple[list[PublishedRow], str]:
    """Rows and a one-line description of their source (the file or the built-in table)."""
    candidate = path if path is not None else default_summary_path()
    if candidate.exists():
        return read_summary_json(candidate), f"{candidate} (MLPerf Inference v4.1)"
    if path is not None:
        raise DatasetPathError(
            f"Published results file {str(path)!r} not found; pass an existing file."
        )
    return (
        builtin_rows(),
        "built-in table of v4.1 headline rows (result IDs in data/published_v4.1.toml)",
    )
