"""An agentic run's figures from hand-made records: every number worked out here."""

from __future__ import annotations

import json

import pytest

from infermeter.runs.agentic import (
    AgenticResult,
    AgenticSettings,
    TrajectoryRecord,
    TurnRecord,
)
from infermeter.runs.agentic_metrics import agentic_metrics, judge
from infermeter.workloads.agentic.benchmarks import get_agentic
from infermeter.workloads.agentic.trajectories import Row, Trajectory
from infermeter.workloads.agentic.turns import TurnAnswer

LS = {
    "id": "x",
    "type": "function",
    "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})},
}

GIT = {**LS, "function": {"name": "bash", "arguments": '{"command": "git diff"}'}}


def _turn(k: int, issued: float, done: float, tokens: int, **kw: object) -> TurnRecord:
    answer = TurnAnswer(
        content="", reasoning="r", tool_calls=(LS,) if k == 0 else (),
        output_tokens=tokens, reasoning_tokens=tokens // 2, ttft_s=0.5,
    )  # fmt: skip
    fields: dict[str, object] = {"ready_s": issued, "issued_s": issued, "done_s": done}
    fields.update(answer=answer, **kw)
    return TurnRecord("c1", "c1", 1, 0, k, 2 * k + 1, "ok", **fields)  # type: ignore[arg-type]


def _result() -> AgenticResult:
    turns = (
        # turn 0: 2 s, 401 tokens; then a 10 s tool delay; turn 1: 3 s, 201 tokens
        _turn(0, 0.0, 2.0, 401),
        _turn(1, 12.0, 15.0, 201, delay_s=10.0),
        # issued after the window closed at 20 s: out of the window, in the full run
        _turn(2, 21.0, 22.0, 900),
        TurnRecord("c1", "c1", 1, 0, 3, 7, "aborted", error="turn 5 timeout"),
    )
    trajectories = (TrajectoryRecord("c1", "c1", 1, 0, 0.0, 22.0, "completed"),)
    return AgenticResult(
        AgenticSettings(concurrency=1), 0.0, 22.0, 20.0, turns, trajectories
    )


def _dataset() -> list[Trajectory]:
    rows = [
        Row("c1", 1, "user", system="s", content="go"),
        Row("c1", 2, "assistant", tool_calls=(LS,)),
        Row("c1", 3, "tool", tool_results=({"tool_call_id": "x", "content": "a"},)),
        Row("c1", 4, "assistant", tool_calls=(GIT,)),
        Row("c1", 5, "user", content="more"),
        Row("c1", 6, "assistant", content="done"),
        Row("c1", 7, "user", content="again"),
        Row("c1", 8, "assistant", tool_calls=(LS,)),
    ]  # fmt: skip
    return [Trajectory("c1", tuple(rows))]


def test_window_figures_exclude_tool_delays_and_late_turns() -> None:
    m = agentic_metrics(_result())
    assert (m.turns_issued, m.turns_completed, m.turns_failed) == (3, 3, 1)
    assert m.turns_in_window == 2 and m.output_tokens == 602
    # tokens over the summed turn times (2 s + 3 s): the 10 s delay does not count
    assert m.e2e_avg_interactivity == pytest.approx(602 / 5.0)
    assert m.system_tps == pytest.approx(602 / 20.0)
    assert m.reasoning_tokens == 200 + 100
    assert m.token_sources == {"usage": 2}
    assert m.ttft_p50_ms == pytest.approx(500.0)
    # TPOT: (2 - 0.5) / 400 and (3 - 0.5) / 200
    assert m.tpot_p50_ms == pytest.approx(1000 * (1.5 / 400 + 2.5 / 200) / 2)
    # the OSL per-turn mean is the full run's (the checker's field)
    assert m.osl_per_turn_mean == pytest.approx((401 + 201 + 900) / 3)
    assert m.trajectory_time_mean_s == 22.0
    assert m.accuracy is None and m.as_dict()["label"].endswith("(unverified)")


def test_inline_accuracy_and_the_verdict_against_a_benchmark() -> None:
    m = agentic_metrics(_result(), _dataset())
    assert m.accuracy is not None
    # turn 0: ls vs ls = 1; turn 1: nothing vs git = 0; turn 2: text expected
    # (not scored); turn 3: aborted, expected ls = 0
    assert (m.accuracy.scored, m.accuracy.excluded, m.accuracy.missing) == (3, 1, 1)
    assert m.accuracy.percent == pytest.approx(33.33)
    verdict = judge(m, get_agentic("kimi-k3"))  # OSL window 425-520
    assert (verdict.accuracy, verdict.osl, verdict.passed) == ("FAIL", "PASS", False)
    assert verdict.problems == ("inline accuracy 33.33% < 58.32%",)
    qwen = judge(m, get_agentic("qwen3.6-35b-a3b"))  # OSL window 344-422
    assert qwen.problems[1] == "OSL per-turn mean 500.7 outside 344-422 tokens"
