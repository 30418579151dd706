"""Trajectory files: the flat JSONL form, read, checked and written.

One JSON object per line, one line per message, as MLPerf Endpoints' Agentic
Inference example defines it (mlcommons/endpoints
``examples/10_Agentic_Inference/README.md``, "Dataset")::

    {"conversation_id":"c1","turn":1,"role":"user","system":"...","content":"...","tools":[...],"delay_seconds":0.4}
    {"conversation_id":"c1","turn":2,"role":"assistant","tool_calls":[...]}
    {"conversation_id":"c1","turn":3,"role":"tool","tool_results":[...],"delay_seconds":1.2}
    {"conversation_id":"c1","turn":4,"role":"assistant","content":"..."}

A conversation's rows are contiguous and its turns go 1, 2, 3 ... in file
order. Roles follow user -> assistant -> (tool -> assistant)* -> user ...; a
tool row answers the tool calls of the assistant row just before it. Client
turns (user and tool rows) are what the load sends; assistant rows are the
expected answers (inline accuracy's ground truth). A client row's
``delay_seconds`` is the wait before it is sent (the tool's run time).

Every problem is one line naming the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from infermeter.errors import ConfigError, DatasetError
from infermeter.workloads.agentic.turns import Message

ROLES = ("user", "assistant", "tool")
CLIENT_ROLES = ("user", "tool")
# Which role may follow which (the reference dataset's rule).
_NEXT: dict[str, tuple[str, ...]] = {
    "": ("user",),
    "user": ("assistant",),
    "assistant": ("tool", "user"),
    "tool": ("assistant", "user"),
}


class TrajectoryError(ConfigError, DatasetError):
    """A trajectory file is malformed: ``FILE:LINE: FIELD: problem`` (exit 2)."""

    def __init__(self, path: str, line: int, field_name: str, problem: str) -> None:
        self.path, self.line, self.field = path, line, field_name
        super().__init__(f"{path}:{line}: {field_name}: {problem}")


@dataclass(frozen=True, slots=True)
class Row:
    """One message row of a trajectory file."""

    conversation_id: str
    turn: int
    role: str
    line: int = 0
    system: str | None = None
    content: str | None = None
    tools: tuple[Message, ...] = ()
    tool_calls: tuple[Message, ...] = ()
    tool_results: tuple[Message, ...] = ()
    reasoning_content: str | None = None
    delay_seconds: float = 0.0
    # Fields the form does not name (e.g. ``intent_codes``), kept for scoring.
    extra: Message = field(default_factory=dict)

    def to_json(self) -> Message:
        """The row as a JSONL object (empty optional fields left out)."""
        out: Message = {
            "conversation_id": self.conversation_id,
            "turn": self.turn,
            "role": self.role,
        }
        optional: Message = {
            "system": self.system,
            "content": self.content,
            "tools": list(self.tools),
            "tool_calls": list(self.tool_calls),
            "tool_results": list(self.tool_results),
            "reasoning_content": self.reasoning_content,
            "delay_seconds": self.delay_seconds,
        }
        out.update({k: v for k, v in optional.items() if v})
        out.update(self.extra)
        return out

    def messages(self) -> list[Message]:
        """The chat message(s) this row adds: one per tool result for a tool row."""
        if self.role == "tool":
            return [
                {
                    "role": "tool",
                    "tool_call_id": r["tool_call_id"],
                    "content": r["content"],
                }
                for r in self.tool_results
            ]
        msg: Message = {"role": self.role, "content": self.content}
        if self.role == "assistant":
            if self.reasoning_content:
                msg["reasoning_content"] = self.reasoning_content
            if self.tool_calls:
                msg["tool_calls"] = list(self.tool_calls)
        return [msg]


@dataclass(frozen=True, slots=True)
class ClientTurn:
    """One request of a trajectory: a user or tool row, and the answer expected."""

    index: int  # 0-based among the conversation's client turns
    row: Row
    expected: Row | None  # the assistant row that follows, if any

    @property
    def delay_s(self) -> float:
        return self.row.delay_seconds


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One conversation: its rows in turn order."""

    conversation_id: str
    rows: tuple[Row, ...]

    @property
    def system(self) -> str | None:
        return next((r.system for r in self.rows if r.system), None)

    @property
    def tools(self) -> tuple[Message, ...]:
        """The tools offered, from the first row that lists any."""
        return next((r.tools for r in self.rows if r.tools), ())

    def client_turns(self) -> list[ClientTurn]:
        out: list[ClientTurn] = []
        for i, row in enumerate(self.rows):
            if row.role not in CLIENT_ROLES:
                continue
            nxt = self.rows[i + 1] if i + 1 < len(self.rows) else None
            expected = nxt if nxt is not None and nxt.role == "assistant" else None
            out.append(ClientTurn(len(out), row, expected))
        return out


def read_trajectories(path: Path) -> list[Trajectory]:
    """Read and check a flat trajectory JSONL file; ``TrajectoryError`` on a bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TrajectoryError(str(path), 0, "file", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TrajectoryError(str(path), 0, "file", f"cannot read it ({exc})") from None
    rows = [_row(str(path), n, line) for n, line in _lines(text)]
    if not rows:
        raise TrajectoryError(str(path), 0, "file", "no rows; expected JSONL messages")
    return check_rows(str(path), rows)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield n, line


def check_rows(origin: str, rows: Iterable[Row]) -> list[Trajectory]:
    """Group rows into trajectories, checking order and roles."""
    groups: dict[str, list[Row]] = {}
    last = ""
    for row in rows:
        cid = row.conversation_id
        if cid != last and cid in groups:
            first = groups[cid][0].line
            raise TrajectoryError(
                origin, row.line, "conversation_id",
                f"{cid!r} continues after other conversations (it began on line "
                f"{first}); keep a conversation's rows together",
            )  # fmt: skip
        groups.setdefault(cid, []).append(row)
        last = cid
    for group in groups.values():
        _check_conversation(origin, group)
    return [Trajectory(cid, tuple(g)) for cid, g in groups.items()]


def _check_conversation(origin: str, rows: list[Row]) -> None:
    state = ""
    calls: tuple[Message, ...] = ()
    for expected_turn, row in enumerate(rows, 1):
        where = f"conversation {row.conversation_id!r}"
        if row.turn != expected_turn:
            raise TrajectoryError(
                origin, row.line, "turn",
                f"{where} has turn {row.turn} where turn {expected_turn} is due; "
                "turns go 1, 2, 3 ... in file order",
            )  # fmt: skip
        if row.role not in _NEXT[state]:
            raise TrajectoryError(
                origin, row.line, "role", _role_problem(where, state, row)
            )
        if row.role == "tool" and not calls:
            raise TrajectoryError(
                origin, row.line, "tool_results",
                f"{where} turn {row.turn}: a tool result without a call (the "
                "assistant row before it has no tool_calls)",
            )  # fmt: skip
        if row.role == "user" and calls:
            raise TrajectoryError(
                origin, row.line, "role",
                f"{where} turn {row.turn}: a user row right after tool calls; "
                "their tool row must come first",
            )  # fmt: skip
        calls = row.tool_calls if row.role == "assistant" else ()
        state = row.role


def _role_problem(where: str, state: str, row: Row) -> str:
    if not state:
        return (
            f"{where} starts with a {row.role!r} row (turn {row.turn}); "
            "it must start with a 'user' row"
        )
    return (
        f"{where} turn {row.turn}: {row.role!r} cannot follow {state!r}; expected "
        + " or ".join(repr(r) for r in _NEXT[state])
    )


_KNOWN = frozenset(
    {
        "conversation_id", "turn", "role", "system", "content", "tools",
        "tool_calls", "tool_results", "reasoning_content", "delay_seconds",
    }
)  # fmt: skip


def _row(origin: str, n: int, line: str) -> Row:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise TrajectoryError(origin, n, "json", f"not JSON ({exc.args[0]})") from None
    if not isinstance(obj, dict):
        raise TrajectoryError(origin, n, "json", "not a JSON object")
    get = _Getter(origin, n, obj)
    role = get.text("role", required=True)
    if role not in ROLES:
        raise TrajectoryError(
            origin, n, "role", f"{role!r}; use one of {', '.join(ROLES)}"
        )
    row = Row(
        conversation_id=_conversation_id(get),
        turn=get.turn(),
        role=role or "",
        line=n,
        system=get.text("system"),
        content=get.text("content"),
        tools=get.dicts("tools"),
        tool_calls=get.dicts("tool_calls"),
        tool_results=get.dicts("tool_results"),
        reasoning_content=get.text("reasoning_content"),
        delay_seconds=get.delay(),
        extra={k: v for k, v in obj.items() if k not in _KNOWN},
    )
    _check_content(get, row)
    return row


def _conversation_id(get: _Getter) -> str:
    cid = get.text("conversation_id", required=True) or ""
    if not cid or any(not 32 <= ord(c) <= 126 for c in cid):
        get.fail("conversation_id", "must be a non-empty printable ASCII string")
    return cid


def _check_content(get: _Getter, row: Row) -> None:
    if row.role == "user" and not row.content:
        get.fail("content", "a user row needs non-empty content")
    if row.role == "assistant" and not (row.content or row.tool_calls):
        get.fail("content", "an assistant row needs content or tool_calls")
    if row.role == "tool" and not row.tool_results:
        get.fail("tool_results", "a tool row needs a non-empty tool_results list")
    for i, call in enumerate(row.tool_calls):
        fn = call.get("function")
        if not (isinstance(call.get("id"), str) and call["id"]):
            get.fail(f"tool_calls[{i}].id", "must be a non-empty string")
        if call.get("type") != "function":
            get.fail(f"tool_calls[{i}].type", "must be 'function'")
        if not (
            isinstance(fn, dict) and isinstance(fn.get("name"), str) and fn["name"]
        ):
            get.fail(f"tool_calls[{i}].function.name", "must be a non-empty string")
        elif not isinstance(fn.get("arguments"), str | dict):
            get.fail(
                f"tool_calls[{i}].function.arguments", "must be a JSON string or object"
            )
    for i, result in enumerate(row.tool_results):
        if not (isinstance(result.get("tool_call_id"), str) and result["tool_call_id"]):
            get.fail(f"tool_results[{i}].tool_call_id", "must be a non-empty string")
        if "content" not in result:
            get.fail(f"tool_results[{i}].content", "is required")


@dataclass(frozen=True, slots=True)
class _Getter:
    """Typed field reads of one row; a wrong type fails naming the field."""

    origin: str
    line: int
    obj: Message

    def fail(self, name: str, problem: str) -> NoReturn:
        raise TrajectoryError(self.origin, self.line, name, problem)

    def text(self, name: str, *, required: bool = False) -> str | None:
        value = self.obj.get(name)
        if value is None:
            if required:
                self.fail(name, "missing (required)")
            return None
        if not isinstance(value, str):
            self.fail(name, f"must be a string, got {type(value).__name__}")
        return str(value)

    def turn(self) -> int:
        value = self.obj.get("turn")
        if value is None:
            self.fail("turn", "missing (required)")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail("turn", f"must be a positive integer, got {value!r}")
        return int(value)

    def dicts(self, name: str) -> tuple[Message, ...]:
        value = self.obj.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.fail(name, "must be a list of JSON objects")
        return tuple(value)

    def delay(self) -> float:
        value = self.obj.get("delay_seconds")
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            self.fail("delay_seconds", f"must be a number >= 0, got {value!r}")
        return float(value)


def write_trajectories(path: Path, trajectories: Iterable[Trajectory]) -> int:
    """Write trajectories as flat JSONL; returns the number of rows written."""
    lines = [
        json.dumps(row.to_json(), separators=(",", ":"))
        for t in trajectories
        for row in t.rows
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)
