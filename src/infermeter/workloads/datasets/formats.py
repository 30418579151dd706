"""Readers for the dataset files MLPerf reference implementations use, and chat formats.

GPT-J CNN-DailyMail JSON, SQuAD v1.1 JSON, an ImageNet ``val_map.txt`` image
list, ShareGPT JSON and multi-turn JSONL (``{"messages": [{role, content}]}``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import DatasetError
from infermeter.workloads.datasets.base import ListSource, Sample

# The instruction-tuning prompt of the GPT-J reference (Alpaca format).
GPTJ_PROMPT = (
    "Below is an instruction that describes a task, paired with an input that "
    "provides further context. Write a response that appropriately completes the "
    "request.\n\n### Instruction:\n{instruction}\n\n### Input:\n{input}"
    "\n\n### Response:"
)


def read_json(path: Path) -> Any:
    """Parse a JSON file with one-line errors."""
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{str(path)!r} is not valid JSON (line {exc.lineno}: {exc.msg})."
        ) from None
    except UnicodeDecodeError:
        raise DatasetError(f"{str(path)!r} is not UTF-8 text.") from None


def _need(cond: bool, path: Path, what: str) -> None:
    if not cond:
        raise DatasetError(f"{str(path)!r} is not {what}.")


def cnn_dailymail(path: Path) -> ListSource:
    """GPT-J CNN-DailyMail: a JSON list of {instruction, input, output}."""
    data = read_json(path)
    _need(isinstance(data, list) and bool(data), path, "a non-empty JSON list")
    samples = []
    for i, row in enumerate(data):
        if not isinstance(row, dict) or not {"instruction", "input", "output"} <= set(
            row
        ):
            raise DatasetError(
                f"{str(path)!r} entry {i} lacks instruction/input/output "
                "(expected the GPT-J CNN-DailyMail format)."
            )
        prompt = GPTJ_PROMPT.format(instruction=row["instruction"], input=row["input"])
        samples.append(Sample(index=i, prompt=prompt, reference=str(row["output"])))
    return ListSource(path.name, samples)


def squad(path: Path) -> ListSource:
    """SQuAD v1.1: one sample per question; references are all answer texts."""
    data = read_json(path)
    _need(
        isinstance(data, dict) and isinstance(data.get("data"), list),
        path,
        "SQuAD v1.1 JSON (a 'data' list of articles)",
    )
    samples: list[Sample] = []
    try:
        for article in data["data"]:
            for para in article["paragraphs"]:
                for qa in para["qas"]:
                    answers = tuple(str(a["text"]) for a in qa["answers"])
                    prompt = f"{qa['question']}\n\n{para['context']}"
                    samples.append(
                        Sample(index=len(samples), prompt=prompt, reference=answers)
                    )
    except (KeyError, TypeError) as exc:
        raise DatasetError(
            f"{str(path)!r} is not SQuAD v1.1 JSON (missing {exc})."
        ) from None
    return ListSource(path.name, samples)


class ImageList:
    """ImageNet-style ``val_map.txt`` (``<file> <label>`` lines); images read on load.

    Images are the MLPerf preprocessed ``<file>.npy`` (CHW float32) next to the
    list or in ``image_dir``; JPEG/PNG need Pillow (not a dependency).
    """

    def __init__(self, path: Path, image_dir: Path | None = None) -> None:
        self.name = path.name
        self._dir = image_dir or path.parent
        self._rows: list[tuple[str, int]] = []
        for line_no, line in enumerate(
            path.read_text(encoding="utf-8").splitlines(), 1
        ):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2 or not parts[1].lstrip("-").isdigit():
                raise DatasetError(
                    f"{path}:{line_no}: expected '<image file> <label>', got {line!r}."
                )
            self._rows.append((parts[0], int(parts[1])))

    def __len__(self) -> int:
        return len(self._rows)

    def read(self, index: int) -> Sample:
        name, label = self._rows[index]
        return Sample(index=index, image=self._image(name), reference=label)

    def reference(self, index: int) -> int:
        """The label of image ``index`` without reading the image."""
        return self._rows[index][1]

    def _image(self, name: str) -> np.ndarray[Any, np.dtype[np.float32]]:
        npy = self._dir / f"{name}.npy"
        if not npy.exists():
            npy = (self._dir / name).with_suffix(".npy")
        if npy.exists():
            image: np.ndarray[Any, np.dtype[np.float32]] = np.load(
                npy, allow_pickle=False
            ).astype(np.float32, copy=False)
            return image
        raise DatasetError(
            f"Image {name!r} has no preprocessed {npy.name} in {str(self._dir)!r}; "
            "preprocess to CHW float32 .npy files (as MLPerf's preprocessing does)."
        )


def sharegpt(path: Path) -> ListSource:
    """ShareGPT: [{"conversations": [{"from", "value"}]}]; the first exchange."""
    data = read_json(path)
    _need(isinstance(data, list), path, "a ShareGPT JSON list")
    samples: list[Sample] = []
    for row in data:
        turns = row.get("conversations") if isinstance(row, dict) else None
        if not isinstance(turns, list) or len(turns) < 2:
            continue  # ShareGPT has many one-turn or empty entries; skip them
        first, reply = turns[0], turns[1]
        if first.get("from") != "human" or reply.get("from") != "gpt":
            continue
        samples.append(
            Sample(
                index=len(samples),
                prompt=str(first["value"]),
                reference=str(reply["value"]),
                output_tokens=max(1, len(str(reply["value"]).split())),
            )
        )
    _need(bool(samples), path, "ShareGPT JSON with any human/gpt exchange")
    return ListSource(path.name, samples)


def multi_turn(path: Path) -> ListSource:
    """JSONL of {"messages": [{role, content}]}: a sample per assistant turn."""
    samples: list[Sample] = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            messages = json.loads(line)["messages"]
            history = [(str(m["role"]), str(m["content"])) for m in messages]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise DatasetError(
                f'{path}:{line_no}: expected {{"messages": [{{"role", "content"}}]}}.'
            ) from None
        for turn, (role, content) in enumerate(history):
            if role == "assistant" and turn > 0:
                samples.append(
                    Sample(
                        index=len(samples),
                        messages=tuple(history[:turn]),
                        prompt=history[turn - 1][1],
                        reference=content,
                        output_tokens=max(1, len(content.split())),
                    )
                )
    _need(bool(samples), path, "multi-turn JSONL with any assistant turn")
    return ListSource(path.name, samples)
