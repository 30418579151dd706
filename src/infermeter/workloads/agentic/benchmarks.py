"""The MLPerf Endpoints agentic benchmarks: sampling, OSL windows, accuracy floors.

Read from ``workloads/data/agentic.toml``, whose header says where each value
comes from (the reference client's Agentic Inference README and the
submission checker's ``agentic_targets.py``).
"""

from __future__ import annotations

import difflib
import functools
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from infermeter.errors import ConfigError


@dataclass(frozen=True, slots=True)
class AgenticBenchmark:
    """One agentic benchmark: its model, its fixed sampling and its gates."""

    name: str
    aliases: tuple[str, ...]
    model: str
    served_model: str
    architecture: str
    attention: tuple[str, ...]
    params_total: float
    params_active: float
    context_tokens: int
    dataset_trajectories: int
    sampling: dict[str, float | int]
    chat_template_kwargs: dict[str, Any]
    turn_timeout_s: float
    inline_accuracy_min: float  # percent
    swebench_accuracy_min: float  # percent, on the mean of ``swebench_mean_of``
    swebench_mean_of: int
    osl_per_turn: tuple[float, float]  # inclusive tokens, the checker's gate
    sources: tuple[str, ...]

    def request_fields(self) -> dict[str, Any]:
        """The body fields every request carries (the rules forbid any other)."""
        fields: dict[str, Any] = dict(self.sampling)
        # The reference's max_new_tokens is the OpenAI API's max_tokens.
        fields["max_tokens"] = fields.pop("max_new_tokens")
        if self.chat_template_kwargs:
            fields["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        return fields

    def osl_ok(self, mean_tokens: float) -> bool:
        """Whether a full-run OSL per-turn mean lies in the window."""
        low, high = self.osl_per_turn
        return low <= mean_tokens <= high

    def official_problems(
        self,
        *,
        num_trajectories: int,
        dataset_size: int,
        enable_salt: bool,
        inject_tool_delay: bool,
        stop_issuing_on_first_user_complete: bool,
    ) -> list[str]:
        """Why a run with these settings could not be an official submission."""
        out: list[str] = []
        if dataset_size != self.dataset_trajectories:
            out.append(
                f"the dataset has {dataset_size} trajectories, not the official "
                f"{self.dataset_trajectories}"
            )
        if num_trajectories % self.dataset_trajectories:
            out.append(
                f"num_trajectories {num_trajectories} is not a multiple of "
                f"{self.dataset_trajectories}"
            )
        if not enable_salt:
            out.append("salting is off (enable_salt must be true)")
        if not inject_tool_delay:
            out.append("tool delays are off (inject_tool_delay must be true)")
        if stop_issuing_on_first_user_complete:
            out.append("stop_issuing_on_first_user_complete must be false")
        return out


@functools.cache
def _builtin() -> dict[str, AgenticBenchmark]:
    text = resources.files("infermeter.workloads").joinpath("data/agentic.toml")
    doc = tomllib.loads(text.read_text(encoding="utf-8"))
    return {b.name: b for b in map(_benchmark, doc["agentic"])}


def _benchmark(t: dict[str, Any]) -> AgenticBenchmark:
    return AgenticBenchmark(
        name=t["name"],
        aliases=tuple(t["aliases"]),
        model=t["model"],
        served_model=t["served_model"],
        architecture=t["architecture"],
        attention=tuple(t["attention"]),
        params_total=float(t["params_total"]),
        params_active=float(t["params_active"]),
        context_tokens=int(t["context_tokens"]),
        dataset_trajectories=int(t["dataset_trajectories"]),
        sampling=dict(t["sampling"]),
        chat_template_kwargs=dict(t["chat_template_kwargs"]),
        turn_timeout_s=float(t["turn_timeout_s"]),
        inline_accuracy_min=float(t["inline_accuracy_min"]),
        swebench_accuracy_min=float(t["swebench_accuracy_min"]),
        swebench_mean_of=int(t["swebench_mean_of"]),
        osl_per_turn=(float(t["osl_per_turn"][0]), float(t["osl_per_turn"][1])),
        sources=tuple(t["sources"]),
    )


def list_agentic() -> list[AgenticBenchmark]:
    """Every agentic benchmark, sorted by name."""
    return sorted(_builtin().values(), key=lambda b: b.name)


def get_agentic(name: str) -> AgenticBenchmark:
    """The agentic benchmark called ``name`` or one of its aliases (any case)."""
    wanted = name.strip().lower()
    for bench in _builtin().values():
        if wanted in (bench.name, *bench.aliases):
            return bench
    names = sorted(_builtin())
    close = difflib.get_close_matches(wanted, names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"Unknown agentic benchmark {name!r}.{hint} Known: {', '.join(names)}."
    )
