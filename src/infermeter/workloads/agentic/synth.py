"""Synthetic trajectories of a benchmark's shape, deterministic from a seed.

So an agentic run needs no official data: each trajectory is a coding-agent
session (a system prompt, a ``bash`` tool, a user task, then assistant turns
that either call the tool, answered by a tool row after a delay, or answer in
text, answered by a user follow-up). Lengths are in corpus words (one word is
one token to the mock and simulated servers). Trajectory ``i`` depends only on
``(seed, i)``. The shape's defaults are infermeter's, not MLPerf facts: the
official dataset's distribution is not published with the reference client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError
from infermeter.workloads.agentic.trajectories import Row, Trajectory
from infermeter.workloads.agentic.turns import Message
from infermeter.workloads.datasets.synthetic import corpus_words

BASH_TOOL: Message = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command in the repository and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
# Commands the synthetic agent runs: executables inline accuracy knows.
COMMANDS = (
    "python -m pytest -q tests",
    "grep -rn TODO src",
    "ls -la",
    "cat setup.py",
    "git diff",
    "sed -n 1,40p main.py",
    "find . -name '*.py'",
    "head -n 20 README.md",
)
IntRange = tuple[int, int]


@dataclass(frozen=True, slots=True)
class TrajectoryShape:
    """Ranges (inclusive, drawn uniformly) of a synthetic trajectory."""

    client_turns: IntRange = (3, 10)
    system_tokens: int = 400
    user_tokens: IntRange = (100, 400)
    tool_result_tokens: IntRange = (50, 400)
    output_tokens: IntRange = (300, 500)  # per assistant turn, reasoning included
    reasoning_share: float = 0.5  # of an assistant turn's output tokens
    tool_call_share: float = 0.7  # of assistant turns that are not the last
    delay_s: tuple[float, float] = (0.1, 1.0)  # a tool's run time / user's pause

    def validate(self) -> None:
        for name in (
            "client_turns",
            "user_tokens",
            "tool_result_tokens",
            "output_tokens",
        ):
            low, high = getattr(self, name)
            if not 1 <= low <= high:
                raise ConfigError(f"{name} {low}..{high}: need 1 <= low <= high.")
        for name in ("reasoning_share", "tool_call_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(
                    f"{name} {getattr(self, name)}: need a share in [0, 1]."
                )
        if not 0.0 <= self.delay_s[0] <= self.delay_s[1]:
            raise ConfigError(f"delay_s {self.delay_s}: need 0 <= low <= high.")


def synthetic_trajectories(
    count: int, shape: TrajectoryShape | None = None, *, seed: int = 0
) -> list[Trajectory]:
    """``count`` trajectories; the same ``(count, shape, seed)`` gives the same rows."""
    if count < 1:
        raise ConfigError(f"count {count}: need at least one trajectory.")
    shape = shape or TrajectoryShape()
    shape.validate()
    return [_Builder(shape, seed, i).build() for i in range(count)]


class _Builder:
    def __init__(self, shape: TrajectoryShape, seed: int, index: int) -> None:
        self.shape = shape
        self.rng = np.random.default_rng([seed, index])
        self.cid = f"syn_{index:05d}"
        self.rows: list[Row] = []

    def words(self, n: int) -> str:
        words = corpus_words()
        start = int(self.rng.integers(len(words)))
        return " ".join(words[(start + k) % len(words)] for k in range(n))

    def draw(self, span: IntRange) -> int:
        return int(self.rng.integers(span[0], span[1] + 1))

    def add(self, role: str, **fields: object) -> None:
        self.rows.append(
            Row(self.cid, len(self.rows) + 1, role, line=len(self.rows) + 1, **fields)  # type: ignore[arg-type]
        )

    def build(self) -> Trajectory:
        s = self.shape
        turns = self.draw(s.client_turns)
        self.add(
            "user",
            system=self.words(s.system_tokens),
            content=self.words(self.draw(s.user_tokens)),
            tools=(BASH_TOOL,),
        )
        for k in range(turns):
            last = k == turns - 1
            calls_tool = not last and float(self.rng.random()) < s.tool_call_share
            self._assistant(k, calls_tool)
            if last:
                break
            delay = round(float(self.rng.uniform(*s.delay_s)), 3)
            if calls_tool:
                call_id = f"call_{self.cid}_{k}"
                result = {
                    "tool_call_id": call_id,
                    "content": self.words(self.draw(s.tool_result_tokens)),
                }
                self.add("tool", tool_results=(result,), delay_seconds=delay)
            else:
                self.add(
                    "user",
                    content=self.words(self.draw(s.user_tokens)),
                    delay_seconds=delay,
                )
        return Trajectory(self.cid, tuple(self.rows))

    def _assistant(self, k: int, calls_tool: bool) -> None:
        total = self.draw(self.shape.output_tokens)
        thinking = round(total * self.shape.reasoning_share)
        reasoning = self.words(thinking) if thinking else None
        if not calls_tool:
            self.add(
                "assistant",
                content=self.words(max(1, total - thinking)),
                reasoning_content=reasoning,
            )
            return
        command = COMMANDS[int(self.rng.integers(len(COMMANDS)))]
        call = {
            "id": f"call_{self.cid}_{k}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        self.add("assistant", tool_calls=(call,), reasoning_content=reasoning)


def shape_for_osl(window: tuple[float, float]) -> TrajectoryShape:
    """The default shape with per-turn output lengths inside an OSL-per-turn window."""
    low, high = int(window[0]), int(window[1])
    return TrajectoryShape(output_tokens=(low, high))
