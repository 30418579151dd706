"""Trajectory files: the flat JSONL form read, checked (one-line errors) and written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.one_line import one_line_error

from infermeter.errors import ConfigError
from infermeter.workloads.agentic.synth import (
    TrajectoryShape,
    synthetic_trajectories,
)
from infermeter.workloads.agentic.trajectories import (
    read_trajectories,
    write_trajectories,
)

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
}
GOOD = [
    {"conversation_id": "c1", "turn": 1, "role": "user", "system": "sys",
     "content": "fix the bug", "tools": [{"type": "function"}], "delay_seconds": 0.4},
    {"conversation_id": "c1", "turn": 2, "role": "assistant", "tool_calls": [CALL],
     "reasoning_content": "look first"},
    {"conversation_id": "c1", "turn": 3, "role": "tool",
     "tool_results": [{"tool_call_id": "call_1", "content": "a.py"}], "delay_seconds": 1.2},
    {"conversation_id": "c1", "turn": 4, "role": "assistant", "content": "done",
     "intent_codes": ["I001"]},
    {"conversation_id": "c2", "turn": 1, "role": "user", "content": "hi"},
]  # fmt: skip


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def test_the_documented_form_reads_into_client_turns(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_jsonl(GOOD))
    first, second = read_trajectories(path)
    assert first.conversation_id == "c1" and second.conversation_id == "c2"
    assert first.system == "sys" and first.tools == ({"type": "function"},)
    turns = first.client_turns()
    assert [(t.row.role, t.row.turn, t.delay_s) for t in turns] == [
        ("user", 1, 0.4),
        ("tool", 3, 1.2),
    ]
    assert turns[0].expected is not None and turns[0].expected.tool_calls == (CALL,)
    assert turns[1].expected is not None
    assert turns[1].expected.extra == {"intent_codes": ["I001"]}
    assert turns[1].row.messages() == [
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"}
    ]
    assert second.client_turns()[0].expected is None


def _swap(rows: list[dict[str, object]], i: int, **change: object) -> str:
    changed = [dict(r) for r in rows]
    changed[i].update(change)
    return _jsonl([{k: v for k, v in r.items() if v is not None} for r in changed])


C1 = "conversation 'c1'"
USER5 = {"conversation_id": "c1", "turn": 5, "role": "user", "content": "x"}
BAD_CASES = [
    # turns out of order
    (_swap(GOOD, 2, turn=5), f"3: turn: {C1} has turn 5 where turn 3 is due"),
    # an assistant row before any user row
    (_swap(GOOD, 0, role="assistant"), f"1: role: {C1} starts with a 'assistant' row"),
    # a tool result without a call
    (
        _swap(GOOD, 1, tool_calls=None, content="no call"),
        f"3: tool_results: {C1} turn 3: a tool result without a call",
    ),
    (
        _jsonl([*GOOD, USER5]),
        "6: conversation_id: 'c1' continues after other conversations (it began on line 1)",
    ),
    (
        _swap(GOOD, 1, role="robot"),
        "2: role: 'robot'; use one of user, assistant, tool",
    ),
    (_swap(GOOD, 0, turn="one"), "1: turn: must be a positive integer, got 'one'"),
    (_swap(GOOD, 0, delay_seconds=-1), "1: delay_seconds: must be a number >= 0"),
    (
        _swap(GOOD, 1, tool_calls=[{"id": "x", "type": "function"}]),
        "2: tool_calls[0].function.name",
    ),
    (
        _swap(GOOD, 2, tool_results=[{"content": "x"}]),
        "3: tool_results[0].tool_call_id",
    ),
    (
        _swap(GOOD, 3, content=""),
        "4: content: an assistant row needs content or tool_calls",
    ),
    (_swap(GOOD, 4, content=7), "5: content: must be a string, got int"),
    (_jsonl(GOOD[:3]) + "{not json\n", "4: json: not JSON"),
    (
        _swap(GOOD, 1, role="user", content="again"),
        f"2: role: {C1} turn 2: 'user' cannot follow 'user'; expected 'assistant'",
    ),
]


@pytest.mark.parametrize(("text", "where"), BAD_CASES)
def test_a_malformed_file_fails_on_one_line_naming_file_line_and_field(
    tmp_path: Path, text: str, where: str
) -> None:
    message = one_line_error(read_trajectories, tmp_path / "t.jsonl", text)
    assert message.startswith(f"{tmp_path / 't.jsonl'}:{where}")


def test_a_user_row_right_after_tool_calls_is_refused(tmp_path: Path) -> None:
    rows = [*GOOD[:2], {**GOOD[4], "conversation_id": "c1", "turn": 3}]
    message = one_line_error(read_trajectories, tmp_path / "t.jsonl", _jsonl(rows))
    assert message.endswith(
        "t.jsonl:3: role: conversation 'c1' turn 3: a user row right after tool "
        "calls; their tool row must come first"
    )


def test_a_missing_or_empty_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.jsonl:0: file: no such file"):
        read_trajectories(tmp_path / "missing.jsonl")
    assert "no rows" in one_line_error(read_trajectories, tmp_path / "e.jsonl", "\n")


def test_synthetic_trajectories_round_trip_and_follow_the_seed(tmp_path: Path) -> None:
    shape = TrajectoryShape(client_turns=(2, 6), output_tokens=(20, 30))
    made = synthetic_trajectories(12, shape, seed=7)
    path = tmp_path / "syn.jsonl"
    rows = write_trajectories(path, made)
    assert rows == sum(len(t.rows) for t in made)
    back = read_trajectories(path)
    assert [r.to_json() for t in back for r in t.rows] == [
        r.to_json() for t in made for r in t.rows
    ]
    again = synthetic_trajectories(12, shape, seed=7)
    other = synthetic_trajectories(12, shape, seed=8)
    assert [r.to_json() for t in again for r in t.rows] == [
        r.to_json() for t in made for r in t.rows
    ]
    assert [r.to_json() for t in other for r in t.rows] != [
        r.to_json() for t in made for r in t.rows
    ]


def test_synthetic_trajectories_have_the_shape_asked(tmp_path: Path) -> None:
    shape = TrajectoryShape(
        client_turns=(3, 5), output_tokens=(40, 60), tool_call_share=1.0,
        reasoning_share=0.5, delay_s=(0.2, 0.4),
    )  # fmt: skip
    made = synthetic_trajectories(20, shape, seed=1)
    for t in made:
        turns = t.client_turns()
        assert 3 <= len(turns) <= 5
        # every assistant turn but the last calls the tool; the last answers in text
        assert all(c.row.role == "tool" for c in turns[1:])
        assert all(c.expected is not None for c in turns)
        assert all(0.2 <= c.delay_s <= 0.4 for c in turns[1:])
        for row in t.rows:
            if row.role == "assistant":
                words = len((row.content or "").split())
                words += len((row.reasoning_content or "").split())
                assert row.tool_calls or 40 <= words <= 60
    none = synthetic_trajectories(5, TrajectoryShape(tool_call_share=0.0), seed=1)
    assert all(r.role != "tool" for t in none for r in t.rows)
    with pytest.raises(ConfigError, match=r"client_turns 0\.\.2"):
        synthetic_trajectories(1, TrajectoryShape(client_turns=(0, 2)))
