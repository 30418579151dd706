"""Published MLPerf LLM rows for calibration and validation, with their IDs.

Reads a ``summary_results.json`` of any round in place (never copied): closed,
datacenter rows of the LLM benchmarks in Offline, Server and Interactive;
``-99``/``-99.9`` rows of one run merged (the ``-99`` figure kept); accelerators
per node times nodes. Every LLM row is either a ``PublishedRow`` or a
``Skipped`` row with the reason the model cannot place it. Precision comes from
the stack and the declared type together, never from ``weight_data_types``
alone (spec section 1.5, gotcha 1).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.perfmodel.parts import PartMatch, resolve_parts
from infermeter.perfmodel.specs import (
    PRECISION_BYTES,
    Accelerator,
    ModelArch,
    get_model,
    runs_at,
)

SHARED_RELATIVE = Path("..") / "shared" / "data" / "mlperf"
SCENARIOS = ("Offline", "Server", "Interactive")
_BENCHMARKS = {
    "llama2-70b": "llama2-70b",
    "mixtral-8x7b": "mixtral-8x7b",
    "gptj": "gptj-6b",
    "llama3.1-8b": "llama3.1-8b",
    "llama3.1-405b": "llama3.1-405b",
    "deepseek-r1": "deepseek-r1",
    "gpt-oss-120b": "gpt-oss-120b",
}
_SUFFIX = re.compile(r"-(99|99\.9|interactive|edge)$")
_VERSION_UNDERSCORE = re.compile(r"^(llama\d)_(\d)")  # llama3_1-8b: LoadGen's name
_TOKEN_UNITS = ("tokens/s",)
_MISLABELLED = ("queries/s", "samples/s")


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
    round: str = ""
    nodes: int = 1
    variant: str = ""
    power: str = ""
    parts: tuple[tuple[str, int], ...] = ()
    system: str = ""
    flags: str = ""
    preview: bool = False

    @property
    def group(self) -> tuple[str, str, str]:
        """The calibration group: (accelerator, software stack, precision)."""
        return (self.accelerator, self.stack, self.precision)

    @property
    def system_key(self) -> tuple[str, int, str]:
        """Rows held out together: one accelerator x count x software stack.

        Variants (a power cap, CTS, virtualisation) share the key: vendors submit
        near-identical copies of one system, so they leave together.
        """
        return (self.accelerator, self.count, self.stack)

    @property
    def label(self) -> str:
        return f"{self.result_id} {self.count}x{self.accelerator} {self.benchmark} {self.scenario}"


@dataclass(frozen=True, slots=True)
class Skipped:
    """An LLM row the model cannot place, and why."""

    result_id: str
    benchmark: str
    scenario: str
    accelerator: str
    reason: str


def stack_of(software: str) -> str:
    """Normalise the ``Software`` field to a serving stack family."""
    text = software.lower()
    if "llmboost" in text:
        return "llmboost"
    if "tensorrt" in text or "trtllm" in text or "trt-llm" in text:
        return "trt-llm"  # v6.1 names it "TRTLLM-rubin"
    if "sglang" in text:
        return "sglang"
    if "vllm" in text:
        return "vllm"
    if "pytorch" in text:
        return "pytorch"
    return "other"


_DECLARED = {
    "fp4": "fp4",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "int4",
    "uint4": "int4",
    "fp16": "fp16",
    "bf16": "bf16",
}


def infer_precision(
    acc: Accelerator, stack: str, declared: str, model: ModelArch | None = None
) -> str:
    """Runtime precision of a row.

    A declared low precision (FP4, FP8, INT8, INT4) is what ran where the part
    runs it: natively, INT4 weight-only, or ``model``'s FP4 checkpoint weight-only
    (``runs_at``). A declared 16-bit type names the starting checkpoint
    for submitters whose stacks quantise (NVIDIA's TensorRT configs run FP8 on
    Hopper/Ada and FP4 on Blackwell; AMD's ROCm vLLM and LLMBoost code runs FP8), so
    those run the part's lowest native precision; other stacks run what they declare.
    """
    text = declared.strip().lower()
    got = next((v for k, v in _DECLARED.items() if k in text.split(",")[0]), "fp16")
    native = runs_at(acc, model, got) if model is not None else acc.supports(got)
    runs = native or got == "int4"
    if PRECISION_BYTES[got] < 2 and runs:
        return got
    if stack == "trt-llm":
        return acc.lowest_precision()
    if stack in ("vllm", "llmboost") and acc.vendor == "amd" and acc.supports("fp8"):
        return "fp8"
    return "fp16"


def benchmark_of(model: str) -> str | None:
    """The benchmark of a row's model name: "llama2-70b-99.9" -> llama2-70b; the
    LoadGen spelling "llama3_1-8b" (results repositories) reads as "llama3.1-8b"."""
    base = _SUFFIX.sub("", model.strip().lower())
    base = _SUFFIX.sub("", base)
    return _BENCHMARKS.get(_VERSION_UNDERSCORE.sub(r"\1.\2", base))


def is_llm_row(r: dict[str, Any]) -> bool:
    """Closed, datacenter, an LLM benchmark, Offline/Server/Interactive."""
    return (
        r.get("Category") == "closed"
        and r.get("Suite") == "datacenter"
        and r.get("Scenario") in SCENARIOS
        and benchmark_of(str(r.get("Model", ""))) is not None
    )


def summary_number(x: object) -> float | None:
    """A summary_results.json number: int, float, "8", "8.0" or "1,234.5"; None for
    text, "", booleans, NaN and infinities (JSON from other tools may carry them)."""
    if isinstance(x, bool):
        return None
    value: float | None = None
    if isinstance(x, int | float):
        value = float(x)
    elif isinstance(x, str):
        try:
            value = float(x.replace(",", "").strip())
        except ValueError:
            return None
    return value if value is not None and math.isfinite(value) else None


def _positive(x: object) -> float | None:
    """``x`` as a finite number > 0, else None."""
    v = summary_number(x)
    return v if v is not None and v > 0 else None


def _round(r: dict[str, Any]) -> str:
    version = str(r.get("version") or "")
    if version:
        return version if version.startswith("v") else f"v{version}"
    rid = str(r.get("ID", ""))
    return "v" + rid.split("-", 1)[0].lstrip("v") if "-" in rid else ""


def _nodes(r: dict[str, Any]) -> int | None:
    """``Nodes`` (1 where absent); None where it is there but not a whole count >= 1."""
    if r.get("Nodes") in (None, ""):
        return 1
    nodes = _positive(r.get("Nodes"))
    return round(nodes) if nodes is not None and nodes >= 1 else None


def _count(r: dict[str, Any], nodes: int) -> int | None:
    """Accelerators in the system; None for a named part without a count."""
    total = _positive(r.get("Total Accelerators"))
    if total:
        return round(total)
    per_node = _positive(r.get("a#"))
    if per_node:
        return round(per_node * nodes)
    if str(r.get("Accelerator") or "").strip():
        return None  # a part is named but not counted: never guess 1
    # CPU-only rows: sockets per node times nodes.
    return round((_positive(r.get("host_processors_per_node")) or 1.0) * nodes)


def _parts(r: dict[str, Any], count: int) -> PartMatch | None:
    raw = str(r.get("Accelerator") or "").strip() or str(r.get("Processor") or "")
    return resolve_parts(raw, count, str(r.get("System") or ""))


def parse_row(r: dict[str, Any]) -> PublishedRow | Skipped:
    """One LLM row of the JSON: a row the model can place, or the reason it cannot."""
    bench = benchmark_of(str(r.get("Model", ""))) or str(r.get("Model"))
    rid, scenario = str(r.get("ID", "?")), str(r.get("Scenario"))
    raw_acc = str(r.get("Accelerator") or "") or f"CPU {r.get('Processor') or '?'}"

    def skip(reason: str) -> Skipped:
        return Skipped(rid, bench, scenario, raw_acc, reason)

    value = _positive(r.get("Performance_Result"))
    unit = str(r.get("Performance_Units", "")).strip().lower()
    flags = ""
    if unit in _MISLABELLED:
        flags = (
            f"unit {r.get('Performance_Units')} on a token benchmark, read as tokens/s"
        )
    elif unit not in _TOKEN_UNITS:
        return skip(f"unit {r.get('Performance_Units')!r} is not tokens/s")
    if value is None:
        return skip(f"no positive numeric result ({r.get('Performance_Result')!r})")
    nodes = _nodes(r)
    count = None if nodes is None else _count(r, nodes)
    if nodes is None or count is None or count < 1:
        return skip(
            f"no accelerator count (a# {r.get('a#')!r}, Nodes {r.get('Nodes')!r})"
        )
    match = _parts(r, count)
    if match is None:
        what = "processor" if not r.get("Accelerator") else "accelerator"
        return skip(f"no spec for {what} {raw_acc!r} (infermeter model specs)")
    try:
        arch = get_model(bench)
    except ConfigError:
        return skip(f"no architecture for benchmark {bench!r}")
    software = str(r.get("Software", ""))
    stack = stack_of(software)
    acc = match.accelerator
    declared = str(r.get("weight_data_types", ""))
    precision = infer_precision(acc, stack, declared, arch)
    return PublishedRow(
        result_id=rid,
        submitter=str(r.get("Submitter", "")),
        accelerator=match.key,
        count=count,
        benchmark=bench,
        scenario=scenario,
        tokens_per_s=value,
        stack=stack,
        precision=precision,
        software=software,
        round=_round(r),
        nodes=nodes,
        variant=match.variant,
        power=match.power,
        parts=tuple((a.key, n) for a, n in match.parts),
        system=str(r.get("System", "")),
        flags=flags,
        preview=str(r.get("Availability", "")).lower() == "preview",
    )


# The results repositories' summary.json (mlcommons/inference_results_v6.1 and on)
# is an object of result objects keyed "0", "1", ... under other field names; these
# are the summary_results.json names the readers use. It carries no result ID: the
# submitter's system directory stands for one (``repository_id``).
_REPOSITORY_FIELDS = {
    "Organization": "Submitter",
    "Division": "Category",
    "SystemType": "Suite",
    "SystemName": "System",
    "accelerator_model_name": "Accelerator",
    "accelerators_per_node": "a#",
    "number_of_nodes": "Nodes",
    "total_accelerators": "Total Accelerators",
    "framework": "Software",
    "Result": "Performance_Result",
    "Units": "Performance_Units",
    "host_processor_model_name": "Processor",
}
SUMMARY_FORMS = (
    "an MLCommons summary_results.json (a JSON array of result objects) or a "
    "results repository's summary.json (an object of result objects)"
)


def repository_id(r: dict[str, Any]) -> str:
    """A results repository row's stand-in for a result ID: the round and the
    submitter's system directory ("6.1-AMD/8xMI355X_2xEPYC_9575F")."""
    version = str(r.get("version") or "").lstrip("v")
    return f"{version}-{r.get('Organization', '')}/{r.get('Platform', '')}"


def summary_records(data: object) -> list[dict[str, Any]] | None:
    """The result objects of a decoded summary file under summary_results.json's
    field names, or None when ``data`` is neither form (``SUMMARY_FORMS``)."""
    if isinstance(data, list) and all(isinstance(x, dict) for x in data):
        return data
    if not isinstance(data, dict) or not data:
        return None
    if not all(isinstance(x, dict) for x in data.values()):
        return None
    out = []
    for r in data.values():
        row = {_REPOSITORY_FIELDS.get(k, k): v for k, v in r.items()}
        row.setdefault("ID", repository_id(r))
        out.append(row)
    return out


def _read(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"Published results file {str(path)!r} not found; pass an existing file."
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"Cannot read published results {str(path)!r}: {exc}."
        ) from None


def _records(path: Path, raw: bytes) -> list[dict[str, Any]]:
    try:
        data = json.loads(raw.decode())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"Cannot read published results {str(path)!r}: {exc}."
        ) from None
    records = summary_records(data)
    if records is None:
        raise ConfigError(f"{str(path)!r} is not {SUMMARY_FORMS}.")
    return records


@dataclass(frozen=True, slots=True)
class Rows:
    """What a file holds: rows the model places, rows it cannot, and the round(s)."""

    rows: tuple[PublishedRow, ...]
    skipped: tuple[Skipped, ...]
    rounds: tuple[str, ...]
    source: str

    @property
    def total(self) -> int:
        return len(self.rows) + len(self.skipped)


def read_rows(path: Path) -> Rows:
    """LLM rows of one ``summary_results.json``; -99/-99.9 rows of one run merged.

    A file whose bytes were parsed before is not parsed again: a plan, a prediction
    and a refit each read the same rounds, and parsing is most of a file's cost
    (hashing it is ~1 %)."""
    raw = _read(path)
    key = (str(path), hashlib.sha256(raw).hexdigest())
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_FILES:
            del _PARSED[next(iter(_PARSED))]  # the oldest
        _PARSED[key] = _parse_rows(Path(path), raw)
    return _PARSED[key]


_PARSED: dict[tuple[str, str], Rows] = {}  # (path as given, sha256) -> rows
_PARSED_FILES = 8


def _parse_rows(path: Path, raw: bytes) -> Rows:
    seen: dict[tuple[str, str, str], PublishedRow | Skipped] = {}
    records = sorted(
        (r for r in _records(path, raw) if is_llm_row(r)),
        key=lambda r: str(r.get("Model", "")).endswith("-99.9"),
    )
    for record in records:
        got = parse_row(record)
        seen.setdefault((got.result_id, got.benchmark, got.scenario), got)
    placed = sorted(
        (g for g in seen.values() if isinstance(g, PublishedRow)),
        key=lambda r: (r.result_id, r.benchmark, r.scenario),
    )
    skipped = sorted(
        (g for g in seen.values() if isinstance(g, Skipped)),
        key=lambda r: (r.result_id, r.benchmark, r.scenario),
    )
    rounds = sorted({r.round for r in placed} or {"?"})
    return Rows(tuple(placed), tuple(skipped), tuple(rounds), str(path))


def round_ordinal(tag: str) -> int:
    """Rounds in order: two a year (vX.0, vX.1), so v4.1 -> v5.0 is one round."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)", tag.strip())
    if not m:
        return 0
    return 2 * int(m.group(1)) + (1 if int(m.group(2)) else 0)


def shared_dir(repo_root: Path | None = None) -> Path:
    """Where the shared MLPerf files live relative to a checkout (read in place)."""
    root = repo_root if repo_root is not None else Path(__file__).resolve().parents[3]
    return (root / SHARED_RELATIVE).resolve()


def round_file(name: str) -> Path:
    """A round name ("v4.1") to the shared file, or a path as given."""
    tag = name.strip()
    if re.fullmatch(r"v?\d+\.\d+", tag):
        tag = tag if tag.startswith("v") else f"v{tag}"
        site = shared_dir() / f"summary_results_{tag}.json"
        # From v6.1 the round is a results repository's summary.json, kept as
        # summary_{tag}.json beside the website's files.
        repo = shared_dir() / f"summary_{tag}.json"
        return repo if repo.exists() and not site.exists() else site
    return Path(name)
