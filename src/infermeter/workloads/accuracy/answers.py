"""Answers from the dataset's references, encoded as each metric's script decodes them.

A fake SUT that replies with ``answer(...)`` scores 100 % on every computed
metric; with ``wrong=True`` the answer is deliberately wrong in a way the metric
sees (another class, boxes of another category, flipped clicks, an empty mask,
other words, another number). Tests use it to show a metric PASSes a correct
answer set and FAILs a perturbed one.
"""

from __future__ import annotations

import numpy as np

from infermeter.errors import DatasetError
from infermeter.workloads.accuracy import clicks, detection, speech, vlm
from infermeter.workloads.benchmark import Benchmark
from infermeter.workloads.datasets.base import Boxes, Sample

WRONG_TEXT = "an unrelated reply that answers nothing"
IMAGE_SIDE = 64  # synthetic SDXL answers: 64x64x3, not the reference's 1024x1024x3
MBXP_SOLUTION, MBXP_WRONG = "    return a + b\n", "    return a - b\n"


def is_wrong(index: int, fraction: float) -> bool:
    """Whether sample ``index`` gets a wrong answer (a fixed, spread-out choice)."""
    return (index * 2654435761 % 1000) / 1000.0 < fraction


def answer(
    bench: Benchmark, sample: Sample, *, wrong: bool = False
) -> tuple[bytes, int]:
    """(response bytes, token count) answering ``sample`` from its reference."""
    ref = sample.reference
    if bench.dataset_format == "coco-captions":
        return _image(sample, wrong), 1
    if bench.dataset_format == "shopify-catalogue" and isinstance(ref, str):
        return vlm.encode_answer("other > misc" if wrong else ref), 8
    if isinstance(ref, Boxes):
        if wrong:  # every box of another category: none matches
            ref = Boxes(
                ref.boxes, ref.labels + 1000, ref.width, ref.height, ref.image_id
            )
        return detection.encode_detections(sample.index, ref), 1
    if isinstance(ref, np.ndarray):
        if bench.dataset_format == "criteo":
            return clicks.encode_clicks(ref, flip=wrong), 1
        mask = np.zeros_like(ref) if wrong else ref
        return mask.astype(np.dtype(bench.response_dtype)).tobytes(), 1
    if isinstance(ref, int):
        label = ref + 1 if wrong else ref
        return np.asarray([label], dtype=bench.response_dtype).tobytes(), 1
    if isinstance(ref, str) and bench.dataset_format == "librispeech":
        text = " ".join("zz" for _ in ref.split()) if wrong else ref
        return speech.encode_labels(text), max(2, len(text.split()))
    if isinstance(ref, (str, tuple)):
        text = _text(ref if isinstance(ref, str) else ref[0], sample.task or "", wrong)
        # The sample's expected output length when known: right or wrong, the
        # answer is as long as the reference's, so only quality metrics move.
        count = sample.output_tokens or len(text.split())
        return text.encode("utf-8"), max(2, count)
    raise DatasetError(
        f"Sample {sample.index} has no reference to answer from; the fake SUT's "
        "answers need a dataset with references."
    )


def _image(sample: Sample, wrong: bool) -> bytes:
    """An HWC uint8 image drawn from the sample (a different one when wrong)."""
    rng = np.random.default_rng([sample.index, int(wrong)])
    return rng.integers(
        0, 256, size=(IMAGE_SIDE, IMAGE_SIDE, 3), dtype=np.uint8
    ).tobytes()


def _text(ref: str, task: str, wrong: bool) -> str:
    """A completion whose extracted answer is ``ref`` (or, when wrong, is not)."""
    task = task.lower()
    if task == "gsm8k":
        return (
            f"Adding it up step by step. The answer is {_other(ref) if wrong else ref}."
        )
    if task == "mbxp":
        return MBXP_WRONG if wrong else MBXP_SOLUTION
    if "aime" in task or "math500" in task:
        return f"Working through it, the result is \\boxed{{{_other(ref) if wrong else ref}}}."
    if "gpqa" in task or "mmlu_pro" in task:
        letter = "A" if wrong and ref != "A" else ("B" if wrong else ref)
        return f"Weighing the options. ANSWER: {letter}"
    return WRONG_TEXT if wrong else ref


def _other(ref: str) -> str:
    try:
        return str(int(ref) + 1)
    except ValueError:
        return ref + "1"
