"""Score an accuracy log against its dataset: ``score_accuracy_log -> AccuracyReport``.

Responses are decoded as the MLPerf scripts do (``np.frombuffer`` with the
benchmark's dtype); LLM token ids are detokenised with the dataset's tokenizer,
or read as UTF-8 text when the SUT returned text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from infermeter.errors import ConfigError, DatasetError, MissingDependencyError
from infermeter.workloads.accuracy import (
    answer_match,
    code_exec,
    families,
    gsm8k,
    reasoning,
    rouge,
    squad,
    tokens,
    topk,
)
from infermeter.workloads.accuracy.images import ImageScoring
from infermeter.workloads.accuracy.log import LogEntry, read_accuracy_log
from infermeter.workloads.accuracy.test06 import Test06Result, check_responses
from infermeter.workloads.benchmark import Benchmark
from infermeter.workloads.datasets.base import DatasetQSL
from infermeter.workloads.datasets.tokenizer import Tokenizer

ResponseFormat = Literal["auto", "tokens", "text"]
ROUGE_METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
NOT_COMPUTED = {
    "ne": (
        "the DLRMv3 reference computes NE, accuracy and AUC with its own windowed "
        "MetricsLogger (3000-sample window, multitask configs); not reproduced"
    ),
    "vbench_score": "needs VBench and its models, which cannot be installed offline",
}
# Benchmark-specific reasons where a metric name is shared.
NOT_COMPUTED_FOR = {
    ("pointpainting", "map"): "needs the Waymo 3D detection metrics (not installed)",
    ("dlrm-v3", "accuracy"): NOT_COMPUTED["ne"],
    ("dlrm-v3", "auc"): NOT_COMPUTED["ne"],
}
TOTALS = ("gen_len",)  # summed over the log: judged only on the full dataset
DETECTION_FORMATS = ("coco", "openimages")


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One metric: its value and, when the benchmark sets one, its target."""

    metric: str
    value: float | None
    reference: float | None = None
    lower: float | None = None
    upper: float | None = None
    passed: bool | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class AccuracyReport:
    """Every metric of one scored log; ``passed`` when all targets are met."""

    benchmark: str
    level: float
    samples: int
    metrics: tuple[MetricResult, ...]
    test06: Test06Result | None = None

    @property
    def passed(self) -> bool:
        targets = [
            m for m in self.metrics if m.passed is not None or m.lower is not None
        ]
        return bool(targets) and all(m.passed for m in targets)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        if self.test06 is not None:
            data["test06"]["passed"] = self.test06.passed
        return data


def accuracy_level(benchmark: Benchmark, level: float | None) -> float:
    """The benchmark's accuracy level matching ``level`` (a fraction), its first
    when None; another level is a usage error (it used to score against it)."""
    levels = benchmark.accuracy_levels
    if level is None:
        return levels[0]
    for known in levels:
        if math.isclose(level, known):
            return known
    names = " or ".join(f"{x * 100:g}" for x in levels)
    raise ConfigError(
        f"--level {level * 100:g} is not an accuracy level of {benchmark.name}; "
        f"use {names} (percent)."
    )


def score_accuracy_log(
    path: str | Path,
    benchmark: Benchmark,
    qsl: DatasetQSL,
    *,
    level: float | None = None,
    dtype: str | None = None,
    tokenizer: Tokenizer | None = None,
    response_format: ResponseFormat = "auto",
    image_scoring: ImageScoring | None = None,
) -> AccuracyReport:
    """Score ``path`` (a run folder or an accuracy log) for ``benchmark`` on ``qsl``."""
    level = accuracy_level(benchmark, level)
    entries = read_accuracy_log(path)
    if not entries:
        raise DatasetError(f"Accuracy log in {str(path)!r} has no entries to score.")
    _check_same_dataset(entries, qsl)
    dtype = dtype or benchmark.response_dtype
    values, notes, test06 = _compute(
        entries,
        benchmark,
        qsl,
        dtype=dtype,
        tokenizer=tokenizer or qsl.tokenizer,
        fmt=response_format,
        image_scoring=image_scoring,
    )
    metrics = _judge(values, notes, benchmark, level, len(entries))
    return AccuracyReport(benchmark.name, level, len(entries), metrics, test06)


def _check_same_dataset(entries: Sequence[LogEntry], qsl: DatasetQSL) -> None:
    worst = max(e.qsl_idx for e in entries)
    if worst >= qsl.total_sample_count or min(e.qsl_idx for e in entries) < 0:
        raise DatasetError(
            f"The accuracy log refers to sample {worst}, but dataset {qsl.name!r} has "
            f"{qsl.total_sample_count} samples: the log is from another dataset."
        )


def _compute(
    entries: Sequence[LogEntry],
    bench: Benchmark,
    qsl: DatasetQSL,
    *,
    dtype: str,
    tokenizer: Tokenizer | None,
    fmt: ResponseFormat,
    image_scoring: ImageScoring | None = None,
) -> tuple[dict[str, float], dict[str, str], Test06Result | None]:
    """(metric values, reasons for metrics not computed, TEST06 checks)."""
    wanted = {t.metric for t in bench.accuracy}
    family = _family(bench, wanted)
    try:
        if wanted & {"clip_score", "fid"}:
            values, notes = families.score_images(entries, qsl, image_scoring)
            return values, notes, None
        if family is not None:
            return family(entries, qsl, dtype), {}, None
        if "top1" in wanted:
            return _vision(entries, qsl, dtype), {}, None
    except MissingDependencyError as exc:
        return {}, dict.fromkeys(wanted, str(exc)), None
    texts, counts, use_tokens = _texts(entries, dtype, tokenizer, fmt)
    refs = [qsl.reference(e.qsl_idx) for e in entries]
    if "f1" in wanted:
        truths = [r if isinstance(r, tuple) else (str(r),) for r in refs]
        return squad.squad_scores(texts, truths), {}, None
    values, notes = _text_metrics(entries, qsl, texts, refs, wanted)
    values["tokens_per_sample"] = tokens.tokens_per_sample(counts)
    values["gen_len"] = float(tokens.gen_len(texts))
    values["gen_num"] = float(len(texts))
    test06 = None
    if use_tokens:
        eos = tokenizer.eos_id if tokenizer is not None else None
        test06 = check_responses(entries, dtype=dtype, eos_id=eos)
    return values, notes, test06


Family = Callable[[Sequence[LogEntry], DatasetQSL, str], dict[str, float]]


def _family(bench: Benchmark, wanted: set[str]) -> Family | None:
    """The non-text metric family of ``bench`` (None: text or top-1)."""
    if "map" in wanted and bench.dataset_format in DETECTION_FORMATS:
        return lambda entries, qsl, _: families.score_detection(entries, qsl)
    if "auc" in wanted and bench.dataset_format == "criteo":
        return families.score_clicks
    if "dice" in wanted:
        return families.score_segmentation
    if "word_accuracy" in wanted:
        return families.score_speech
    if "f1_hierarchical" in wanted:
        return families.score_vlm
    if "accuracy" in wanted and bench.dataset_format == "igbh":
        return families.score_nodes
    return None


def _vision(entries: Sequence[LogEntry], qsl: DatasetQSL, dtype: str) -> dict[str, Any]:
    preds = [e.array(dtype) for e in entries]
    labels = [_label(qsl.reference(e.qsl_idx)) for e in entries]
    values: dict[str, Any] = {"top1": topk.top_k(preds, labels, 1)}
    if all(p.size >= 5 for p in preds):
        values["top5"] = topk.top_k(preds, labels, 5)
    return values


def _label(reference: object) -> int:
    if not isinstance(reference, int):
        raise DatasetError(
            f"Dataset reference {reference!r} is not a class label; "
            "score this log with an image-classification dataset."
        )
    return reference


def _texts(
    entries: Sequence[LogEntry],
    dtype: str,
    tokenizer: Tokenizer | None,
    fmt: ResponseFormat,
) -> tuple[list[str], list[int], bool]:
    use_tokens = fmt == "tokens" or (fmt == "auto" and tokenizer is not None)
    if use_tokens and tokenizer is None:
        raise DatasetError(
            "Responses are token ids but no tokenizer is known; pass --tokenizer "
            "tokenizer.json (or --response-format text if the SUT returned text)."
        )
    texts: list[str] = []
    counts: list[int] = []
    for entry in entries:
        if use_tokens and tokenizer is not None:
            ids = entry.array(dtype).tolist()
            if ids and max(ids) >= tokenizer.vocab_size:
                raise DatasetError(
                    f"Sample {entry.qsl_idx} has token id {max(ids)}, outside "
                    f"tokenizer {tokenizer.name!r}: the log is from another model "
                    "or tokenizer."
                )
            texts.append(tokenizer.decode(ids))
            counts.append(
                entry.token_count if entry.token_count is not None else len(ids)
            )
        else:
            text = _utf8(entry)
            texts.append(text)
            counts.append(entry.token_count or len(text.split()))
    return texts, counts, use_tokens


def _utf8(entry: LogEntry) -> str:
    try:
        return entry.data.decode("utf-8")
    except UnicodeDecodeError:
        raise DatasetError(
            f"Response of sample {entry.qsl_idx} is not UTF-8 text; if it holds "
            "token ids, pass --tokenizer tokenizer.json."
        ) from None


def _text_metrics(
    entries: Sequence[LogEntry],
    qsl: DatasetQSL,
    texts: list[str],
    refs: list[Any],
    wanted: set[str],
) -> tuple[dict[str, float], dict[str, str]]:
    tasks = [qsl.sample(e.qsl_idx).task or "" for e in entries]
    mixed = "gsm8k" in wanted  # mixtral: each sub-dataset has its own metric
    values: dict[str, float] = {}
    notes: dict[str, str] = {}
    if wanted & set(ROUGE_METRICS):
        keep = [i for i, t in enumerate(tasks) if not mixed or "orca" in t.lower()]
        values.update(
            rouge.rouge([texts[i] for i in keep], [str(refs[i]) for i in keep])
        )
    if mixed:
        keep = [i for i, t in enumerate(tasks) if "gsm8k" in t.lower()]
        values["gsm8k"] = gsm8k.gsm8k_accuracy(
            [texts[i] for i in keep], [str(refs[i]) for i in keep]
        )
    if "mbxp" in wanted:
        keep = [i for i, t in enumerate(tasks) if t.lower() == "mbxp"]
        value, note = _mbxp(
            [qsl.sample(entries[i].qsl_idx).prompt or "" for i in keep],
            [texts[i] for i in keep],
            [str(refs[i]) for i in keep],
        )
        if value is not None:
            values["mbxp"] = value
        if note:
            notes["mbxp"] = note
    if "exact_match" in wanted:
        value, note = _exact_match(texts, [str(r) for r in refs], tasks)
        if value is not None:
            values["exact_match"] = value
        if note:
            notes["exact_match"] = note
    return values, notes


def _mbxp(
    prompts: list[str], completions: list[str], tests: list[str]
) -> tuple[float | None, str]:
    """MBXP pass rate in the sandbox, or why it was not (fully) computed."""
    problem = code_exec.isolation_problem()
    if problem is not None:
        return None, problem
    value, graded, skipped = code_exec.mbxp_pass_rate(prompts, completions, tests)
    if value is None:
        return None, "no Python MBXP samples in this log to run"
    if skipped:
        return value, (
            f"over {graded} Python samples; {skipped} samples in other languages are "
            "not run, so the target is not judged"
        )
    return value, ""


def _exact_match(
    texts: list[str], refs: list[str], tasks: list[str]
) -> tuple[float | None, str]:
    """Reasoning sets grade per sub-dataset; others compare extracted answers."""
    if not any(
        reasoning.grader_for(t) or t.lower() in reasoning.NOT_GRADED for t in tasks
    ):
        return answer_match.exact_match(texts, refs), ""
    value, graded, skipped = reasoning.grade(texts, refs, tasks)
    if not skipped:
        return value, ""
    return value, (
        f"over {graded} graded samples; {skipped} samples of sub-datasets infermeter "
        "cannot grade (livecodebench needs its harness) are left out, so the target "
        "is not judged"
    )


def _judge(
    values: dict[str, float],
    notes: dict[str, str],
    bench: Benchmark,
    level: float,
    samples: int,
) -> tuple[MetricResult, ...]:
    results: list[MetricResult] = []
    for target in bench.accuracy:
        lower, upper = target.bounds(level)
        value = values.pop(target.metric, None)
        note = notes.get(target.metric, "")
        if value is None:
            note = note or _not_computed(bench, target.metric)
            results.append(
                MetricResult(
                    target.metric, None, target.reference, lower, upper, False, note
                )
            )
        elif note or _partial_total(bench, target.metric, samples):
            note = note or (
                f"a total over the full dataset ({bench.dataset_samples} samples); this "
                f"log has {samples}, so the target is not judged"
            )
            results.append(
                MetricResult(target.metric, value, target.reference, note=note)
            )
        else:
            passed = target.passes(value, level)
            results.append(
                MetricResult(
                    target.metric, value, target.reference, lower, upper, passed
                )
            )
    for name, value in values.items():  # informative metrics without a target
        results.append(MetricResult(name, float(value), note="informative"))
    return tuple(results)


def _not_computed(bench: Benchmark, metric: str) -> str:
    return NOT_COMPUTED_FOR.get(
        (bench.name, metric), NOT_COMPUTED.get(metric, "not computed by infermeter")
    )


def _partial_total(bench: Benchmark, metric: str, samples: int) -> bool:
    return metric in TOTALS and samples < (bench.dataset_samples or 0)
