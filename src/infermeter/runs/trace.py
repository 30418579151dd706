"""Trace replay: a JSONL file of timed requests; prompts that honour its prefix hashes.

One JSON object per line: ``timestamp`` (ms, the Mooncake convention) or
``timestamp_s``; ``input_length`` / ``input_tokens``; ``output_length`` /
``output_tokens``; optional ``hash_ids`` (prefix blocks: equal ids at the
same position give equal prompt text, so a server's prefix cache can hit).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infermeter.errors import DatasetError
from infermeter.loadgen.interfaces import NsArray
from infermeter.suts.prompts import Prompt

NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class Trace:
    """Requests of a trace: arrival ns from the first one, lengths, prefix blocks."""

    arrival_ns: NsArray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    hash_ids: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return int(self.arrival_ns.shape[0])

    def scaled(self, speed: float) -> Trace:
        """The same trace replayed ``speed`` times faster."""
        arrivals = np.round(self.arrival_ns / speed).astype(np.int64)
        return Trace(arrivals, self.input_tokens, self.output_tokens, self.hash_ids)


def load_trace(path: str | Path) -> Trace:
    """Read a JSONL trace; ``DatasetError`` names the file and line of a bad row."""
    times: list[float] = []
    inputs: list[int] = []
    outputs: list[int] = []
    hashes: list[tuple[int, ...]] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"Cannot read trace {str(path)!r}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            times.append(_time_ms(row))
            inputs.append(int(row.get("input_length", row.get("input_tokens"))))
            outputs.append(int(row.get("output_length", row.get("output_tokens"))))
            hashes.append(tuple(int(h) for h in row.get("hash_ids") or ()))
            if inputs[-1] < 0 or outputs[-1] < 1:
                raise ValueError(f"lengths {inputs[-1]} in, {outputs[-1]} out")
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            # KeyError: a row without timestamp or timestamp_s (was an internal error)
            why = f"no {exc.args[0]}" if isinstance(exc, KeyError) else str(exc)
            raise DatasetError(
                f"{path}:{number}: bad trace row ({why}); need timestamp (ms) or "
                "timestamp_s, input_length >= 0 and output_length >= 1"
            ) from None
    if not times:
        raise DatasetError(f"Trace {str(path)!r} has no requests")
    ms = np.asarray(times)
    if np.any(np.diff(ms) < 0):
        raise DatasetError(f"Trace {str(path)!r}: timestamps must not go backwards")
    arrivals = np.round((ms - ms[0]) * NS_PER_MS).astype(np.int64)
    return Trace(arrivals, np.asarray(inputs), np.asarray(outputs), tuple(hashes))


def _time_ms(row: dict[str, object]) -> float:
    if "timestamp_s" in row:
        return float(row["timestamp_s"]) * 1000.0  # type: ignore[arg-type]
    return float(row["timestamp"])  # type: ignore[arg-type]


class TracePrompts:
    """A ``PromptSource`` for a trace: word-tokens, shared prefixes from ``hash_ids``.

    Each hash id stands for ``block_size`` tokens (Mooncake uses 512); rows
    without hash ids get text of their own.
    """

    def __init__(self, trace: Trace, *, block_size: int = 512) -> None:
        self.trace = trace
        self.block_size = block_size

    def prompt(self, index: int) -> Prompt:
        i = index % len(self.trace)
        n = int(self.trace.input_tokens[i])
        words: list[str] = []
        for h in self.trace.hash_ids[i]:
            words.extend(f"h{h}.{j}" for j in range(self.block_size))
            if len(words) >= n:
                break
        words.extend(f"r{i}.{j}" for j in range(max(0, n - len(words))))
        return Prompt(
            text=" ".join(words[:n]), max_tokens=int(self.trace.output_tokens[i])
        )
