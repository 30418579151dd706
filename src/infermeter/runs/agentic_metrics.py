"""The figures of one agentic run: per turn, per trajectory, per point.

Per turn (completed turns issued inside the performance window): TTFT (send
to the first non-empty fragment of any kind: text, reasoning or tool call),
TPOT ((latency - TTFT) / (output tokens - 1)) and output tokens, reasoning
and tool-call tokens included, counted by the sources ``suts.token_count``
names (the turns each source counted are reported). Per point: ``e2e_avg_interactivity``, output
tokens over the summed turn times (issue to completion), so tool delays and
the gaps between turns never count; system tokens/s over the window. Per
trajectory: completion time (first issue to last answer, tool delays
included). The OSL per-turn mean is over every completed turn of the run
(the checker reads the full-run mean, not the windowed one). Inline
accuracy covers every issued turn that has an expected answer. All are
infermeter results (unverified).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from infermeter.runs.agentic import AgenticResult, TurnRecord
from infermeter.workloads.agentic.accuracy import (
    InlineAccuracy,
    ModelTurn,
    inline_accuracy,
)
from infermeter.workloads.agentic.benchmarks import AgenticBenchmark
from infermeter.workloads.agentic.trajectories import Row, Trajectory

LABEL = "infermeter results (unverified)"


@dataclass(frozen=True, slots=True)
class TurnFigures:
    ttft_s: float | None
    tpot_s: float | None
    latency_s: float
    output_tokens: int


@dataclass(frozen=True, slots=True)
class AgenticMetrics:
    concurrency: int
    turns_issued: int
    turns_completed: int
    turns_failed: int  # failed, timed out or aborted
    turns_in_window: int
    trajectories_completed: int
    window_s: float
    output_tokens: int  # completed turns in the window
    reasoning_tokens: int | None  # when every such turn reported them
    system_tps: float
    e2e_avg_interactivity: float | None  # tokens/s over summed turn time
    ttft_p50_ms: float | None
    ttft_p90_ms: float | None
    tpot_p50_ms: float | None
    tpot_p90_ms: float | None
    trajectory_time_mean_s: float | None
    trajectory_time_p90_s: float | None
    osl_per_turn_mean: float | None  # full run
    token_sources: dict[str, int]  # window turns counted by each named source
    accuracy: InlineAccuracy | None

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__slots__ if k != "accuracy"}
        out["label"] = LABEL
        if self.accuracy is not None:
            out["inline_accuracy_percent"] = self.accuracy.percent
            out["inline_accuracy_scored"] = self.accuracy.scored
        return out


def turn_figures(turn: TurnRecord) -> TurnFigures | None:
    """A completed turn's TTFT, TPOT and tokens; None for any other turn."""
    if turn.status != "ok" or turn.answer is None:
        return None
    assert turn.issued_s is not None and turn.done_s is not None
    latency = turn.done_s - turn.issued_s
    tokens = turn.answer.output_tokens
    ttft = turn.answer.ttft_s
    tpot = None
    if ttft is not None and tokens > 1:
        tpot = max(0.0, latency - ttft) / (tokens - 1)
    return TurnFigures(ttft, tpot, latency, tokens)


def _ms(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q) * 1000.0) if values else None


def agentic_metrics(
    result: AgenticResult, trajectories: list[Trajectory] | None = None
) -> AgenticMetrics:
    """Figures of ``result``; inline accuracy when the trajectories are given."""
    window = [t for t in result.turns if result.in_window(t)]
    done = [(t, f) for t in window if (f := turn_figures(t)) is not None]
    tokens = sum(f.output_tokens for _, f in done)
    turn_time = sum(f.latency_s for _, f in done)
    reasoning = [t.answer.reasoning_tokens for t, _ in done if t.answer is not None]
    end = result.window_end_s if result.window_end_s is not None else result.ended_s
    span = max(end - result.started_s, 1e-9)
    ttft = [f.ttft_s for _, f in done if f.ttft_s is not None]
    tpot = [f.tpot_s for _, f in done if f.tpot_s is not None]
    finished = [j for j in result.trajectories if j.status == "completed"]
    times = [j.finished_s - j.started_s for j in finished]
    all_done = [f for t in result.turns if (f := turn_figures(t)) is not None]
    return AgenticMetrics(
        concurrency=result.settings.concurrency,
        turns_issued=sum(t.issued_s is not None for t in result.turns),
        turns_completed=len(all_done),
        turns_failed=sum(t.status != "ok" for t in result.turns),
        turns_in_window=len(window),
        trajectories_completed=len(finished),
        window_s=span,
        output_tokens=tokens,
        reasoning_tokens=(
            sum(r for r in reasoning if r is not None)
            if reasoning and None not in reasoning
            else None
        ),
        system_tps=tokens / span,
        e2e_avg_interactivity=tokens / turn_time if turn_time > 0 else None,
        ttft_p50_ms=_ms(ttft, 50),
        ttft_p90_ms=_ms(ttft, 90),
        tpot_p50_ms=_ms(tpot, 50),
        tpot_p90_ms=_ms(tpot, 90),
        trajectory_time_mean_s=float(np.mean(times)) if times else None,
        trajectory_time_p90_s=float(np.percentile(times, 90)) if times else None,
        osl_per_turn_mean=(
            float(np.mean([f.output_tokens for f in all_done])) if all_done else None
        ),
        token_sources=dict(
            Counter(t.answer.token_source for t, _ in done if t.answer is not None)
        ),
        accuracy=_accuracy(result, trajectories) if trajectories else None,
    )


def _accuracy(result: AgenticResult, trajectories: list[Trajectory]) -> InlineAccuracy:
    expected: dict[tuple[str, int], Row | None] = {
        (t.conversation_id, ct.index): ct.expected
        for t in trajectories
        for ct in t.client_turns()
    }
    issued = []
    for turn in result.turns:
        if turn.issued_s is None and turn.status != "aborted":
            continue
        answer = turn.answer if turn.status == "ok" else None
        model = None
        if answer is not None:
            model = ModelTurn(answer.content, answer.reasoning, answer.tool_calls)
        row = expected.get((turn.source_id, turn.client_turn))
        issued.append((turn.source_id, turn.repeat, row, model))
    return inline_accuracy(issued)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A point against a benchmark's gates: PASS / FAIL per gate."""

    accuracy: str
    osl: str
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.accuracy == "PASS" and self.osl == "PASS"


def judge(metrics: AgenticMetrics, bench: AgenticBenchmark) -> Verdict:
    """Inline accuracy against the floor; the full-run OSL mean against the window."""
    problems: list[str] = []
    acc = metrics.accuracy
    acc_ok = acc is not None and acc.passes(bench.inline_accuracy_min)
    if not acc_ok:
        shown = (
            "none scored" if acc is None or acc.percent is None else f"{acc.percent}%"
        )
        problems.append(f"inline accuracy {shown} < {bench.inline_accuracy_min}%")
    osl = metrics.osl_per_turn_mean
    osl_ok = osl is not None and bench.osl_ok(osl)
    if not osl_ok:
        low, high = bench.osl_per_turn
        shown = "none" if osl is None else f"{osl:.1f}"
        problems.append(f"OSL per-turn mean {shown} outside {low:g}-{high:g} tokens")
    return Verdict(
        "PASS" if acc_ok else "FAIL", "PASS" if osl_ok else "FAIL", tuple(problems)
    )
