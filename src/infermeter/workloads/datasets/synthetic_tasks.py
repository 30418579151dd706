"""Synthetic prompts of mixed sub-datasets, each with an answer its metric can grade.

mixtral-8x7b mixes OpenOrca (ROUGE), GSM8K (a number) and MBXP (code run against
tests); deepseek-r1 and gpt-oss-120b mix AIME (an integer), GPQA and MMLU-Pro (a
letter) and MATH-500 (a boxed expression). Sample ``i`` takes sub-dataset
``i % len(tasks)``; prompts and lengths come from ``SyntheticPrompts``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from infermeter.workloads.datasets.base import Sample
from infermeter.workloads.datasets.synthetic import SyntheticPrompts

TASKS = {
    "mixtral-pickle": ("OpenOrca", "GSM8K", "MBXP"),
    "deepseek-pickle": ("aime", "gpqa", "math500", "mmlu_pro"),
    "gpt-oss-parquet": ("aime", "gpqa", "math500", "mmlu_pro"),
}
MBXP_PROMPT = "# Complete the Python function.\ndef add(a, b):\n"
MBXP_TEST = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"


class SyntheticTaskPrompts:
    """``SyntheticPrompts`` whose samples carry a sub-dataset and its kind of answer."""

    def __init__(self, base: SyntheticPrompts, tasks: tuple[str, ...]) -> None:
        self.name = "synthetic-task-prompts"
        self.base = base
        self.tasks = tasks

    def __len__(self) -> int:
        return len(self.base)

    def read(self, index: int) -> Sample:
        sample = self.base.read(index)
        task = self.tasks[index % len(self.tasks)]
        rng = np.random.default_rng([self.base.seed, index, 7])
        reference = _reference(task, rng, str(sample.reference))
        if task == "MBXP":  # the code runs as prompt + completion + tests
            sample = dataclasses.replace(sample, prompt=MBXP_PROMPT, input_ids=None)
        return dataclasses.replace(sample, reference=reference, task=task)


def _reference(task: str, rng: np.random.Generator, text: str) -> str:
    if task == "GSM8K":
        return str(int(rng.integers(1, 10_000)))
    if task == "MBXP":
        return MBXP_TEST
    if task == "aime":
        return str(int(rng.integers(0, 1000)))
    if task == "gpqa":
        return "ABCD"[int(rng.integers(4))]
    if task == "mmlu_pro":
        return "ABCDEFGHIJ"[int(rng.integers(10))]
    if task == "math500":
        return f"\\frac{{{int(rng.integers(1, 9))}}}{{{int(rng.integers(10, 99))}}}"
    return text
