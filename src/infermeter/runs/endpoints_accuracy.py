"""Accuracy passes of an MLPerf Endpoints curve (§4.3, §5.3, §6.5, §6.6).

At each of §5.3's N points (one per mandatory band: Ultra Low, Low, Medium, High,
the last being C_max, which is also the elected Offline point) the accuracy pass
runs at the point's concurrency on the same endpoint, right after its performance
run (§4.3, single-turn). It issues every accuracy-dataset row exactly once
(§6.5's ``WithoutReplacementSampleOrder``: a seeded permutation, from the bound seed
set's ``sample_index_rng_seed``), keeps every answer, scores them with the
benchmark's metric (ROUGE for a summarization set such as llama3_1-8b's
cnn_dailymail, or exact match) and writes ``accuracy/accuracy_results.json`` in
the checker's schema: one entry per dataset, keyed by its name, with
``dataset_name``, ``dataset_type: accuracy``, ``num_samples`` and ``score``
(metric -> value; ROUGE in percent, the scale of the checker's targets, with
``gen_len``, the answers' characters, which the checker gates for llama3_1-8b).
A result at any other point is an extra the checker refuses (§4.3: N is a fixed
count), so no other point gets one. Against a mock the score is the mock's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import ConfigError, MissingDependencyError
from infermeter.loadgen.records import STATUS_OK, UNSET
from infermeter.runs.endpoints_config import prompt_rows
from infermeter.runs.load import LoadSpec, run_load
from infermeter.suts.prompts import Prompt, PromptSource
from infermeter.workloads.accuracy.answer_match import exact_match
from infermeter.workloads.accuracy.rouge import rouge, split_sentences
from infermeter.workloads.accuracy.tokens import gen_len

METRICS = ("rouge", "exact_match")
# Where a row's expected answer may be (the first present wins).
REFERENCE_FIELDS = ("reference", "output", "answer", "ground_truth")
RESULTS_FILE = "accuracy_results.json"
ANSWERS_FILE = "answers.jsonl"


@dataclass(frozen=True, slots=True)
class AccuracySet:
    """The accuracy dataset: un-salted prompts and their references (§2.9.5.1)."""

    name: str
    texts: list[str]
    references: list[str]
    max_tokens: int

    def prompt(self, index: int) -> Prompt:
        return Prompt(text=self.texts[index], max_tokens=self.max_tokens)

    def __len__(self) -> int:
        return len(self.texts)


def read_accuracy_set(
    path: Path,
    max_tokens: int,
    *,
    reference_field: str | None = None,
    name: str | None = None,
) -> AccuracySet:
    """JSONL rows with a ``prompt`` and a reference (``reference_field``, else the
    first of ``reference``, ``output``, ``answer``, ``ground_truth``); a row without
    one is refused by line. ``name``: the dataset's (default: the file's stem)."""
    fields = (reference_field,) if reference_field else REFERENCE_FIELDS
    texts: list[str] = []
    refs: list[str] = []
    for n, row in prompt_rows(path, "--accuracy-file"):
        ref = next((row[k] for k in fields if k in row), None)
        if not isinstance(ref, str):
            raise ConfigError(
                f"--accuracy-file {path}, line {n}: no reference string; give one of "
                f"{', '.join(fields)}."
            )
        texts.append(row["prompt"])
        refs.append(ref)
    return AccuracySet(name or path.stem, texts, refs, max_tokens)


def check_metric(metric: str, *, library: bool = True) -> None:
    """Refuse an unknown metric, or (``library``: scored in this process) ROUGE
    without its library, before any load."""
    if metric not in METRICS:
        raise ConfigError(
            f"--accuracy-metric {metric!r}: use one of {', '.join(METRICS)}."
        )
    if (
        library
        and metric == "rouge"
        and importlib.util.find_spec("rouge_score") is None
    ):
        raise MissingDependencyError("rouge-score", "accuracy")


class ShuffledPrompts:
    """Query ``i`` gets dataset row ``order[i]``: a seeded permutation, so each row
    is issued exactly once (sampling without replacement, §6.5). The permutation is
    Python's ``random.Random(seed).shuffle`` of the rows, the generator and shuffle
    the reference client's ``WithoutReplacementSampleOrder`` uses (its own accuracy
    phase issues the rows in file order, also once each)."""

    def __init__(self, base: PromptSource, size: int, seed: int) -> None:
        self.base = base
        order = list(range(size))
        random.Random(seed).shuffle(order)
        self.order = np.asarray(order, dtype=np.int64)

    def index(self, query: int) -> int:
        return int(self.order[query])

    def prompt(self, index: int) -> Prompt:
        return self.base.prompt(self.index(index))


@dataclass(slots=True)
class AccuracyOutcome:
    """One accuracy pass: what was issued, answered, and how it scored."""

    concurrency: int
    order: list[int]  # dataset rows in issue order
    answers: list[str | None]  # by dataset row; None: no answer
    scores: dict[str, float]
    metric: str
    duration_s: float

    @property
    def answered(self) -> int:
        return sum(a is not None for a in self.answers)

    def problems(self) -> list[str]:
        """Why the pass falls short (empty: every sample answered)."""
        missing = len(self.answers) - self.answered
        if not missing:
            return []
        return [f"accuracy pass: {missing} of {len(self.answers)} samples unanswered"]

    def summary(self) -> dict[str, Any]:
        return {
            "samples": len(self.answers),
            "answered": self.answered,
            "metric": self.metric,
            "scores": self.scores,
        }


def run_accuracy(
    sut: Any,
    prompts: ShuffledPrompts,
    data: AccuracySet,
    c: int,
    metric: str,
    timeout_s: float,
) -> AccuracyOutcome:
    """Issue every row once at concurrency ``c``, keep the answers, score them."""
    n = len(data)
    spec = LoadSpec(
        mode="concurrency", concurrency=c, requests=n, completion_timeout_s=timeout_s
    )
    result = run_load(sut, spec, sample_count=n, keep_answers=True)
    phase = result.phase
    rec = phase.records
    answers: list[str | None] = [None] * n
    for query in range(phase.samples_issued):
        ok = rec.status[query] == STATUS_OK and rec.completed_ns[query] != UNSET
        raw = phase.response_data.get(query)
        if ok and raw is not None:
            answers[prompts.index(query)] = raw.decode("utf-8", errors="replace")
    # an unanswered sample scores as an empty answer: wrong, never left out
    texts = [a or "" for a in answers]
    return AccuracyOutcome(
        concurrency=c,
        order=[prompts.index(q) for q in range(phase.samples_issued)],
        answers=answers,
        scores=score(metric, texts, data.references),
        metric=metric,
        duration_s=round(result.metrics.duration_ns / 1e9, 6),
    )


def score(
    metric: str, predictions: list[str], references: list[str]
) -> dict[str, float]:
    """The metric's figures: scores as percentages; with ROUGE also ``gen_len``
    and ``gen_num`` (see :func:`generated_length`)."""
    if metric == "rouge":
        return {
            **rouge(predictions, references),
            "gen_len": generated_length(predictions),
            "gen_num": len(predictions),
        }
    return {"exact_match": round(exact_match(predictions, references), 4)}


def generated_length(predictions: list[str]) -> int:
    """``gen_len`` of MLPerf's summarization evaluations (llama3.1-8b's
    ``evaluation.py``, the reference client's ``rouge`` scorer): the characters of
    every answer as ROUGE reads it (stripped, one sentence a line), summed over the
    set. Characters, not tokens: llama3.1-8b's target, 8,167,644 +/- 10 %, is
    about 611 characters for each of its 13,368 samples, so on a smaller set it
    scales with the row count. An unanswered sample adds 0."""
    return gen_len([split_sentences(p) for p in predictions])


def accuracy_results(outcome: AccuracyOutcome, data: AccuracySet) -> dict[str, Any]:
    """``accuracy_results.json`` as the checker reads it (one entry per dataset)."""
    n = len(data)
    return {
        data.name: {
            "dataset_name": data.name,
            "dataset_type": "accuracy",
            "num_samples": n,
            "score": outcome.scores,
            "complete": outcome.answered == n,
            "answered": outcome.answered,
            "concurrency": outcome.concurrency,
            "sample_order": "without replacement: each sample exactly once (§6.5)",
            "duration_s": outcome.duration_s,
            "label": "infermeter results (unverified)",
        }
    }


def write_accuracy(folder: Path, outcome: AccuracyOutcome, data: AccuracySet) -> Path:
    """``accuracy_results.json`` and every answer (``answers.jsonl``, issue order)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RESULTS_FILE
    doc = accuracy_results(outcome, data)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    lines = [
        json.dumps({"issued": k, "row": row, "answer": outcome.answers[row]})
        for k, row in enumerate(outcome.order)
    ]
    (folder / ANSWERS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass(slots=True)
class AccuracyPlan:
    """The accuracy set, its issue order and the levels that run it. The passes
    share one HTTP SUT of their own: bodies are cached by index, and the pass's
    order is not the performance runs'."""

    data: AccuracySet
    prompts: ShuffledPrompts
    levels: list[int]
    sut: Any = None

    @classmethod
    def of(cls, data: AccuracySet, seed: int, levels: list[int]) -> AccuracyPlan:
        return cls(data, ShuffledPrompts(data, len(data), seed), levels)

    def run(
        self,
        stack: contextlib.ExitStack,
        make_sut: Callable[[PromptSource], Any],
        c: int,
        folder: Path,
        *,
        metric: str,
        timeout_s: float,
    ) -> AccuracyOutcome:
        """The pass at ``c``, written to ``folder``."""
        if self.sut is None:
            self.sut = stack.enter_context(contextlib.closing(make_sut(self.prompts)))
        done = run_accuracy(self.sut, self.prompts, self.data, c, metric, timeout_s)
        write_accuracy(folder, done, self.data)
        return done
