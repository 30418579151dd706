"""The agentic load: trajectories replayed turn by turn by at most N users.

As MLPerf Endpoints' Agentic Inference load pattern (mlcommons/endpoints
``examples/10_Agentic_Inference/README.md``): each of ``concurrency`` users
takes the next trajectory, sends its client turns one at a time (one turn in
flight per conversation), waits each turn's ``delay_seconds`` before sending
it (``inject_tool_delay``), and takes another trajectory when it finishes.
Trajectory ``k`` replays dataset conversation ``k mod n`` as repeat
``k div n + 1``; ``num_trajectories`` is a whole multiple of the dataset.

Where it departs from the reference client on purpose: each request carries
the model's own earlier answers (text, reasoning, tool calls), not the
dataset's (``carry="dataset"`` replays the dataset's, as the reference does);
a tool row's results are re-addressed to the model's call ids by position.

Every request has ``X-Session-ID: <conversation id>``. With salting, the
system prompt becomes ``[salt: R]\\n\\n<system>\\n\\n[salt: C]``: ``R`` from
the run's seed and the repeat, ``C`` from the seed and the conversation, four
hex digits each, so a cache may reuse a whole trajectory, the system prompt
within one pass over the dataset, and nothing across passes.

A turn that times out or fails ends its conversation: the rest of its turns
are recorded as aborted (they depend on the lost answer). The performance
window ends when the first user finishes its last trajectory (no trajectory
left to hand out); turns issued before that count even if they finish
later. With ``stop_issuing_on_first_user_complete`` nothing is issued after
it; without it (the official setting) started trajectories run to the end.

HTTP-free: requests go through an injected ``SendTurn``; time is the running
event loop's, so tests run it on virtual time.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field

from infermeter.errors import ConfigError
from infermeter.workloads.agentic.trajectories import ClientTurn, Trajectory
from infermeter.workloads.agentic.turns import (
    SESSION_HEADER,
    Message,
    SendTurn,
    TurnAnswer,
    TurnRequest,
)

CARRY = ("model", "dataset")


@dataclass(frozen=True, slots=True)
class AgenticSettings:
    """The load pattern's knobs, named as the reference client's config names them."""

    concurrency: int = 8
    num_trajectories: int | None = None  # default: the dataset once
    seed: int = 0
    enable_salt: bool = True
    inject_tool_delay: bool = True
    turn_timeout_s: float = 86400.0
    stop_issuing_on_first_user_complete: bool = False
    carry: str = "model"
    session_header: str = SESSION_HEADER

    def trajectories_to_issue(self, dataset_size: int) -> int:
        """``num_trajectories`` checked: a positive whole multiple of the dataset."""
        if self.concurrency < 1:
            raise ConfigError(f"concurrency {self.concurrency}: need at least 1.")
        if not self.turn_timeout_s > 0:
            raise ConfigError(f"turn timeout {self.turn_timeout_s} s: need > 0.")
        if self.carry not in CARRY:
            raise ConfigError(f"carry {self.carry!r}: use one of {', '.join(CARRY)}.")
        n = dataset_size if self.num_trajectories is None else self.num_trajectories
        if n < 1 or n % dataset_size:
            raise ConfigError(
                f"num_trajectories {n}: need a positive multiple of the dataset's "
                f"{dataset_size} trajectories (e.g. {dataset_size} or {2 * dataset_size})."
            )
        return n


def salts(seed: int, repeat: int, source_id: str) -> tuple[str, str]:
    """The repeat's and the conversation's salt: four hex digits each."""

    def hex4(text: str) -> str:
        return hashlib.blake2b(text.encode(), digest_size=2).hexdigest()

    return hex4(f"{seed}/repeat/{repeat}"), hex4(f"{seed}/conversation/{source_id}")


def salted(system: str, repeat_salt: str, conversation_salt: str) -> str:
    return f"[salt: {repeat_salt}]\n\n{system}\n\n[salt: {conversation_salt}]"


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One client turn of one trajectory: when it went, how it ended."""

    conversation_id: str
    source_id: str
    repeat: int
    user: int
    client_turn: int
    turn: int
    status: str  # ok | failed | timeout | aborted
    ready_s: float | None = None  # the previous turn's completion (or the start)
    issued_s: float | None = None
    done_s: float | None = None
    delay_s: float = 0.0  # the tool delay waited before issuing
    answer: TurnAnswer | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class TrajectoryRecord:
    conversation_id: str
    source_id: str
    repeat: int
    user: int
    started_s: float
    finished_s: float
    status: str  # completed | failed | stopped


@dataclass(frozen=True, slots=True)
class AgenticResult:
    """Everything a run of the load recorded (times in loop seconds)."""

    settings: AgenticSettings
    started_s: float
    ended_s: float
    window_end_s: float | None  # STOP_PERFORMANCE_TRACKING
    turns: tuple[TurnRecord, ...]
    trajectories: tuple[TrajectoryRecord, ...]
    salts: dict[str, tuple[str, str]] = field(default_factory=dict)

    def in_window(self, turn: TurnRecord) -> bool:
        """Issued before the performance window closed."""
        if turn.issued_s is None:
            return False
        return self.window_end_s is None or turn.issued_s < self.window_end_s


@dataclass(frozen=True, slots=True)
class _Instance:
    conversation_id: str
    trajectory: Trajectory
    repeat: int


class AgenticLoad:
    """One run of the agentic load pattern over ``trajectories``."""

    def __init__(
        self, trajectories: list[Trajectory], settings: AgenticSettings, send: SendTurn
    ) -> None:
        if not trajectories:
            raise ConfigError("no trajectories to replay; give a non-empty dataset.")
        self.budget = settings.trajectories_to_issue(len(trajectories))
        if settings.enable_salt:
            _need_system_prompts(trajectories)
        self.trajectories, self.settings, self.send = trajectories, settings, send
        self._next = 0
        # What the conversations record, in the order it happens.
        self.turns: list[TurnRecord] = []
        self.finished: list[TrajectoryRecord] = []
        self.salts: dict[str, tuple[str, str]] = {}
        self._window_end: float | None = None
        self._stop = asyncio.Event()

    async def run(self) -> AgenticResult:
        loop = asyncio.get_running_loop()
        start = loop.time()
        users = min(self.settings.concurrency, self.budget)
        await asyncio.gather(*(self._user(u) for u in range(users)))
        return AgenticResult(
            self.settings, start, loop.time(), self._window_end,
            tuple(self.turns), tuple(self.finished), dict(self.salts),
        )  # fmt: skip

    def _take(self) -> _Instance | None:
        if self._stop.is_set() or self._next >= self.budget:
            return None
        k, n = self._next, len(self.trajectories)
        self._next += 1
        source, repeat = self.trajectories[k % n], k // n + 1
        cid = source.conversation_id
        return _Instance(
            cid if repeat == 1 else f"{cid}__repeat_{repeat}", source, repeat
        )

    async def _user(self, user: int) -> None:
        while (inst := self._take()) is not None:
            await _Conversation(self, inst, user).run()
            if self._next >= self.budget:  # this user has no trajectory left
                self._end_window()

    def _end_window(self) -> None:
        if self._window_end is None:
            self._window_end = asyncio.get_running_loop().time()
            if self.settings.stop_issuing_on_first_user_complete:
                self._stop.set()

    @property
    def stopping(self) -> bool:
        """Issuing has stopped (``stop_issuing_on_first_user_complete``)."""
        return self._stop.is_set()

    async def pause(self, seconds: float) -> bool:
        """Wait ``seconds``, or less when issuing stops; True when it stopped."""
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except TimeoutError:
            return False
        return True


def _need_system_prompts(trajectories: list[Trajectory]) -> None:
    for t in trajectories:
        if not t.system:
            line = t.rows[0].line
            raise ConfigError(
                f"line {line}: conversation {t.conversation_id!r} has no system prompt, "
                "which salting needs; add a 'system' field or turn salting off."
            )


class _Conversation:
    """One trajectory's turns, in order, each after its tool delay."""

    def __init__(self, load: AgenticLoad, inst: _Instance, user: int) -> None:
        self.load, self.inst, self.user = load, inst, user
        self.history: list[Message] = []
        self.model_calls: list[str] = []  # ids of the model's last tool calls
        self.ready = 0.0

    def _system(self) -> None:
        system = self.inst.trajectory.system
        if system is None:
            return
        s = self.load.settings
        if s.enable_salt:
            pair = salts(s.seed, self.inst.repeat, self.inst.trajectory.conversation_id)
            self.load.salts[self.inst.conversation_id] = pair
            system = salted(system, *pair)
        self.history.append({"role": "system", "content": system})

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        self._system()
        turns = self.inst.trajectory.client_turns()
        status = "completed"
        self.ready = started  # when the next turn became due (before its delay)
        for ct in turns:
            status = await self._turn(ct, self.ready)
            if status != "ok":
                break
        if status not in ("ok", "completed", "stopped"):
            for rest in turns[ct.index + 1 :]:
                self._record(rest, "aborted", error=f"turn {ct.row.turn} {status}")
        final = {"ok": "completed", "stopped": "stopped"}.get(status, "failed")
        self.load.finished.append(
            TrajectoryRecord(
                self.inst.conversation_id, self.inst.trajectory.conversation_id,
                self.inst.repeat, self.user, started, loop.time(), final,
            )
        )  # fmt: skip

    async def _turn(self, ct: ClientTurn, ready: float) -> str:
        s = self.load.settings
        delay = ct.delay_s if s.inject_tool_delay else 0.0
        if (delay > 0 and await self.load.pause(delay)) or self.load.stopping:
            return "stopped"
        self.history.extend(self._client_messages(ct))
        request = self._request(ct)
        loop = asyncio.get_running_loop()
        issued = loop.time()
        times = {"ready_s": ready, "issued_s": issued, "delay_s": delay}
        try:
            answer = await asyncio.wait_for(self.load.send(request), s.turn_timeout_s)
        except TimeoutError:
            self._record(ct, "timeout", **times, done_s=loop.time(),
                         error=f"no answer in {s.turn_timeout_s:g} s")  # fmt: skip
            return "timeout"
        except Exception as exc:  # any failure ends the conversation
            self._record(ct, "failed", **times, done_s=loop.time(), error=str(exc))
            return "failed"
        self.ready = loop.time()
        self._record(ct, "ok", **times, done_s=self.ready, answer=answer)
        self._carry(ct, answer)
        return "ok"

    def _request(self, ct: ClientTurn) -> TurnRequest:
        expected = ct.expected
        words = None
        if expected is not None:
            words = len((expected.content or "").split())
            words += len((expected.reasoning_content or "").split())
        return TurnRequest(
            conversation_id=self.inst.conversation_id,
            source_id=self.inst.trajectory.conversation_id,
            repeat=self.inst.repeat,
            client_turn=ct.index,
            turn=ct.row.turn,
            messages=tuple(dict(m) for m in self.history),
            tools=self.inst.trajectory.tools,
            headers={self.load.settings.session_header: self.inst.conversation_id},
            expected_tokens=words or None,
        )

    def _client_messages(self, ct: ClientTurn) -> list[Message]:
        messages = ct.row.messages()
        if ct.row.role == "tool" and self.model_calls:
            # The dataset's results answer the dataset's calls; re-address them
            # to the calls the model actually made, by position.
            for i, msg in enumerate(messages[: len(self.model_calls)]):
                msg["tool_call_id"] = self.model_calls[i]
        return messages

    def _carry(self, ct: ClientTurn, answer: TurnAnswer) -> None:
        if self.load.settings.carry == "dataset":
            self.model_calls = []
            if ct.expected is not None:
                self.history.extend(ct.expected.messages())
            return
        self.history.append(answer.message())
        self.model_calls = [str(c.get("id", "")) for c in answer.tool_calls]

    def _record(self, ct: ClientTurn, status: str, **fields: object) -> None:
        self.load.turns.append(
            TurnRecord(
                self.inst.conversation_id, self.inst.trajectory.conversation_id,
                self.inst.repeat, self.user, ct.index, ct.row.turn, status,
                **fields,  # type: ignore[arg-type]
            )
        )  # fmt: skip
