"""``infermeter agentic run``: a whole agentic run, from dataset to run folder.

Everything the user can get wrong is checked before any request goes out and
before the folder exists: the trajectory file (one line naming file, line and
field), the settings (a whole multiple of the dataset, salting's system
prompts), the benchmark name and the folder. The folder then holds:

    agentic.json   settings, figures, verdict against the benchmark, why the run
                   could not be an official one; infermeter results (unverified)
    turns.jsonl    one line per client turn: ids, status, times, tokens

Turns go through the HTTP client's exchange (``suts.agentic_http.ChatTurns``):
its connection pool, timeouts, failure reasons, API key and token counts.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.outfile import replacing, writable_folder
from infermeter.runs.agentic import (
    AgenticLoad,
    AgenticResult,
    AgenticSettings,
    TurnRecord,
)
from infermeter.runs.agentic_metrics import (
    LABEL,
    AgenticMetrics,
    Verdict,
    agentic_metrics,
    judge,
)
from infermeter.suts.agentic_http import ChatTurns
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, Timeouts
from infermeter.workloads.agentic.benchmarks import AgenticBenchmark, get_agentic
from infermeter.workloads.agentic.synth import (
    TrajectoryShape,
    shape_for_osl,
    synthetic_trajectories,
)
from infermeter.workloads.agentic.trajectories import Trajectory, read_trajectories


@dataclass(frozen=True, slots=True)
class AgenticRunSpec:
    """One agentic run as the command line describes it."""

    url: str
    model: str
    output_dir: Path
    settings: AgenticSettings
    dataset: Path | None = None
    synthetic: int = 0  # trajectories to synthesise when no dataset is given
    benchmark: str | None = None
    # The HTTP client's, as the openai SUT takes them (--sut-opt of the same names).
    api_key_env: str | None = None
    api_key_file: str | None = None
    tokenizer: str | None = None  # re-counts tokens when the server sends no usage
    first_token_timeout_s: float = 0.0  # 0: none (--turn-timeout still holds)


@dataclass(frozen=True, slots=True)
class AgenticOutcome:
    folder: Path
    result: AgenticResult
    metrics: AgenticMetrics
    verdict: Verdict | None
    official_problems: tuple[str, ...]
    client: dict[str, Any]  # the HTTP client's counts: turns, reasons, token sources


def chat_turns(spec: AgenticRunSpec, fields: dict[str, Any]) -> ChatTurns:
    """The turn sender: the HTTP client's exchange, configured from ``spec``.

    No total timeout of its own: ``--turn-timeout`` (the load's) bounds a turn.
    """
    config = OpenAIConfig(
        url=spec.url,
        model=spec.model,
        api="chat",
        tokenizer_file=spec.tokenizer,
        timeouts=Timeouts(first_token_s=spec.first_token_timeout_s, total_s=0.0),
    )
    key = ApiKey.load(
        env=spec.api_key_env, file=spec.api_key_file, file_hint="--api-key-file PATH"
    )
    return ChatTurns(config, fields=fields, expected_lengths=not fields, api_key=key)


def load_dataset(
    spec: AgenticRunSpec, bench: AgenticBenchmark | None
) -> list[Trajectory]:
    if spec.dataset is not None:
        return read_trajectories(spec.dataset)
    if spec.synthetic < 1:
        raise ConfigError(
            "give --dataset FILE or --synthetic N (trajectories to make)."
        )
    shape = shape_for_osl(bench.osl_per_turn) if bench else TrajectoryShape()
    return synthetic_trajectories(spec.synthetic, shape, seed=spec.settings.seed)


def _empty_folder(folder: Path) -> None:
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigError(
            f"--output-dir {str(folder)!r} already holds files; choose a new folder."
        )


def run_agentic(spec: AgenticRunSpec) -> AgenticOutcome:
    """Check everything, run the load, write the folder."""
    bench = get_agentic(spec.benchmark) if spec.benchmark else None
    trajectories = load_dataset(spec, bench)
    AgenticLoad(trajectories, spec.settings, _never)  # checks settings and salts
    _empty_folder(spec.output_dir)
    # The URL, the key, the tokenizer: checked here, before the folder exists.
    sender = chat_turns(spec, bench.request_fields() if bench else {})

    async def go() -> AgenticResult:
        async with sender as send:
            return await AgenticLoad(trajectories, spec.settings, send).run()

    writable_folder(spec.output_dir, "--output-dir")
    result = asyncio.run(go())
    metrics = agentic_metrics(result, trajectories)
    verdict = judge(metrics, bench) if bench else None
    problems = _official_problems(bench, spec.settings, len(trajectories), spec)
    outcome = AgenticOutcome(
        spec.output_dir, result, metrics, verdict, problems, sender.counts()
    )
    _write(outcome, spec, bench)
    return outcome


async def _never(request: Any) -> Any:
    raise AssertionError("the settings check sends nothing")


def _official_problems(
    bench: AgenticBenchmark | None,
    s: AgenticSettings,
    size: int,
    spec: AgenticRunSpec,
) -> tuple[str, ...]:
    if bench is None:
        return ("no --benchmark named",)
    problems = bench.official_problems(
        num_trajectories=s.trajectories_to_issue(size),
        dataset_size=size,
        enable_salt=s.enable_salt,
        inject_tool_delay=s.inject_tool_delay,
        stop_issuing_on_first_user_complete=s.stop_issuing_on_first_user_complete,
    )
    if spec.dataset is None:
        problems.insert(0, "synthetic trajectories, not the official dataset")
    if s.carry != "model":
        problems.append("carry=dataset replays the dataset's answers")
    return tuple(problems)


def _write(
    out: AgenticOutcome, spec: AgenticRunSpec, bench: AgenticBenchmark | None
) -> None:
    doc = {
        "label": LABEL,
        "url": spec.url,
        "model": spec.model,
        "benchmark": bench.name if bench else None,
        "dataset": str(spec.dataset) if spec.dataset else f"synthetic:{spec.synthetic}",
        "settings": asdict(spec.settings),
        "metrics": out.metrics.as_dict(),
        "client": out.client,
        "verdict": None if out.verdict is None else {
            "accuracy": out.verdict.accuracy, "osl": out.verdict.osl,
            "problems": list(out.verdict.problems),
        },
        "official": not out.official_problems,
        "not_official_because": list(out.official_problems),
        "window_end_s": _rel(out.result.window_end_s, out.result),
        "duration_s": out.result.ended_s - out.result.started_s,
    }  # fmt: skip
    with replacing(spec.output_dir / "agentic.json") as tmp:
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    lines = [json.dumps(_turn_line(t, out.result)) for t in out.result.turns]
    with replacing(spec.output_dir / "turns.jsonl") as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _rel(t: float | None, result: AgenticResult) -> float | None:
    return None if t is None else round(t - result.started_s, 6)


def _turn_line(t: TurnRecord, result: AgenticResult) -> dict[str, Any]:
    answer = t.answer
    return {
        "conversation_id": t.conversation_id,
        "repeat": t.repeat,
        "user": t.user,
        "client_turn": t.client_turn,
        "turn": t.turn,
        "status": t.status,
        "in_window": result.in_window(t),
        "delay_s": t.delay_s,
        "issued_s": _rel(t.issued_s, result),
        "done_s": _rel(t.done_s, result),
        "ttft_s": None if answer is None else answer.ttft_s,
        "output_tokens": None if answer is None else answer.output_tokens,
        "tool_calls": None if answer is None else len(answer.tool_calls),
        "error": t.error,
    }
