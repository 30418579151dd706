"""The agentic load pattern on virtual time, against a fake "send one chat turn"."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import replace

import pytest

from infermeter.errors import ConfigError
from infermeter.runs.agentic import (
    AgenticLoad,
    AgenticResult,
    AgenticSettings,
    salted,
    salts,
)
from infermeter.testing.virtual_loop import run_virtual
from infermeter.workloads.agentic.synth import TrajectoryShape, synthetic_trajectories
from infermeter.workloads.agentic.trajectories import Trajectory
from infermeter.workloads.agentic.turns import TurnAnswer, TurnRequest

SHAPE = TrajectoryShape(
    client_turns=(2, 5), output_tokens=(20, 40), tool_call_share=0.6, delay_s=(0.5, 2.0)
)


class FakeModel:
    """Answers after 0.1 s + 0.01 s a token; calls the tool when the dataset did."""

    def __init__(
        self,
        trajectories: list[Trajectory],
        hang: frozenset[tuple[str, int]] = frozenset(),
    ) -> None:
        self.expected = {
            (t.conversation_id, ct.index): ct.expected
            for t in trajectories
            for ct in t.client_turns()
        }
        self.hang, self.fail = set(hang), set[tuple[str, int]]()
        self.requests: list[TurnRequest] = []
        self.in_flight: dict[str, int] = defaultdict(int)
        self.total, self.peak = 0, 0

    async def __call__(self, req: TurnRequest) -> TurnAnswer:
        self.requests.append(req)
        self.in_flight[req.conversation_id] += 1
        assert self.in_flight[req.conversation_id] == 1  # one turn per conversation
        self.total += 1
        self.peak = max(self.peak, self.total)
        try:
            key = (req.conversation_id, req.client_turn)
            if key in self.fail:
                raise ConnectionError("reset by peer")
            await asyncio.sleep(3600 if key in self.hang else 0.1 + 0.01 * 30)
            return self.answer(req)
        finally:
            self.in_flight[req.conversation_id] -= 1
            self.total -= 1

    def answer(self, req: TurnRequest) -> TurnAnswer:
        expected = self.expected[(req.source_id, req.client_turn)]
        calls = ()
        if expected is not None and expected.tool_calls:
            calls = tuple(
                {**c, "id": f"model-{req.conversation_id}-{req.client_turn}"}
                for c in expected.tool_calls
            )
        return TurnAnswer(
            content=f"answer {req.conversation_id}#{req.client_turn}",
            reasoning="thinking",
            tool_calls=calls,
            output_tokens=30,
            reasoning_tokens=10,
            ttft_s=0.1,
        )


def _run(
    trajectories: list[Trajectory], settings: AgenticSettings, model: FakeModel
) -> AgenticResult:
    async def main() -> AgenticResult:
        return await AgenticLoad(trajectories, settings, model).run()

    return run_virtual(main())


def test_at_most_n_conversations_run_and_each_turn_waits_for_the_last_plus_its_delay() -> (
    None
):
    data = synthetic_trajectories(20, SHAPE, seed=3)
    model = FakeModel(data)
    result = _run(data, AgenticSettings(concurrency=4, seed=1), model)
    assert model.peak == 4
    assert len(result.trajectories) == 20
    assert all(j.status == "completed" for j in result.trajectories)
    turns = {(t.conversation_id, t.client_turn): t for t in result.turns}
    assert len(turns) == sum(len(t.client_turns()) for t in data)
    by_id = {t.conversation_id: t for t in data}
    for t in result.turns:
        ct = by_id[t.source_id].client_turns()[t.client_turn]
        assert t.status == "ok" and t.delay_s == ct.delay_s
        assert t.issued_s is not None and t.ready_s is not None
        # virtual time: the turn leaves exactly its tool delay after the last one ended
        assert t.issued_s == pytest.approx(t.ready_s + ct.delay_s)
        if t.client_turn:
            before = turns[(t.conversation_id, t.client_turn - 1)]
            assert t.ready_s == before.done_s


def test_each_request_carries_the_models_own_answers_and_the_session() -> None:
    data = synthetic_trajectories(6, SHAPE, seed=5)
    model = FakeModel(data)
    _run(data, AgenticSettings(concurrency=3, seed=1), model)
    by_conv: dict[str, list[TurnRequest]] = defaultdict(list)
    for req in model.requests:
        by_conv[req.conversation_id].append(req)
    assert len(by_conv) == 6
    for cid, reqs in by_conv.items():
        assert {r.headers["X-Session-ID"] for r in reqs} == {cid}
        for k, req in enumerate(reqs):
            carried = [m for m in req.messages if m["role"] == "assistant"]
            assert [m["content"] for m in carried] == [
                f"answer {cid}#{i}" for i in range(k)
            ]
            assert all(m["reasoning_content"] == "thinking" for m in carried)
            assert req.messages[0]["role"] == "system"
            # tool results answer the model's call ids, not the dataset's
            for i, m in enumerate(req.messages):
                if m["role"] == "tool":
                    call = req.messages[i - 1]["tool_calls"][0]["id"]
                    assert m["tool_call_id"] == call and call.startswith("model-")
            # each request extends the previous one
            if k:
                previous = reqs[k - 1].messages
                assert req.messages[: len(previous)] == previous


def test_dataset_carry_replays_the_datasets_answers() -> None:
    data = synthetic_trajectories(3, SHAPE, seed=5)
    model = FakeModel(data)
    _run(data, AgenticSettings(concurrency=3, carry="dataset"), model)
    last = {r.conversation_id: r for r in model.requests}
    for t in data:
        want = [r for r in t.rows if r.role == "assistant"][: len(t.client_turns()) - 1]
        got = [m for m in last[t.conversation_id].messages if m["role"] == "assistant"]
        assert got == [r.messages()[0] for r in want]


def _salts(seed: int) -> dict[str, tuple[str, str]]:
    data = synthetic_trajectories(4, SHAPE, seed=2)
    settings = AgenticSettings(concurrency=2, seed=seed, num_trajectories=8)
    return _run(data, settings, FakeModel(data)).salts


def test_salts_follow_the_seed_the_repeat_and_the_conversation() -> None:
    one, again, other = _salts(7), _salts(7), _salts(8)
    assert one == again and len(one) == 8
    assert all(one[c] != other[c] for c in one)
    first, second = one["syn_00001"], one["syn_00001__repeat_2"]
    assert first[0] != second[0]  # the repeat salt differs between passes
    assert first[1] == second[1]  # the conversation salt is the conversation's
    assert one["syn_00000"][0] == first[0]  # one pass shares its repeat salt
    assert salted("sys", *salts(7, 2, "syn_00001")) == (
        f"[salt: {second[0]}]\n\nsys\n\n[salt: {second[1]}]"
    )
    assert all(len(s) == 4 and int(s, 16) >= 0 for pair in one.values() for s in pair)


def test_salted_requests_carry_the_salt_around_the_system_prompt() -> None:
    data = synthetic_trajectories(2, SHAPE, seed=2)
    model = FakeModel(data)
    result = _run(data, AgenticSettings(concurrency=2, seed=4), model)
    for req in model.requests:
        system = data[int(req.source_id[-1])].system
        assert req.messages[0]["content"] == salted(
            str(system), *result.salts[req.conversation_id]
        )
    unsalted = FakeModel(data)
    _run(data, AgenticSettings(concurrency=2, enable_salt=False), unsalted)
    assert unsalted.requests[0].messages[0]["content"] == data[0].system


def test_num_trajectories_is_a_whole_multiple_of_the_dataset() -> None:
    data = synthetic_trajectories(3, SHAPE, seed=2)
    model = FakeModel(data)
    result = _run(data, AgenticSettings(concurrency=2, num_trajectories=9), model)
    ids = sorted(j.conversation_id for j in result.trajectories)
    assert ids == sorted(
        f"syn_0000{i}{'' if r == 1 else f'__repeat_{r}'}"
        for i in range(3)
        for r in (1, 2, 3)
    )
    with pytest.raises(
        ConfigError, match="num_trajectories 4: need a positive multiple"
    ):
        AgenticLoad(data, AgenticSettings(num_trajectories=4), model)
    no_system = [
        replace(t, rows=(replace(t.rows[0], system=None), *t.rows[1:])) for t in data
    ]
    with pytest.raises(ConfigError, match="'syn_00000' has no system prompt"):
        AgenticLoad(no_system, AgenticSettings(), model)


def test_a_turn_timeout_or_failure_fails_the_rest_of_its_conversation_only() -> None:
    data = synthetic_trajectories(4, TrajectoryShape(client_turns=(4, 4)), seed=2)
    model = FakeModel(data, hang={("syn_00001", 1)})
    model.fail.add(("syn_00002", 2))
    settings = AgenticSettings(
        concurrency=4, turn_timeout_s=60.0, inject_tool_delay=False
    )
    result = _run(data, settings, model)
    status = {(t.conversation_id, t.client_turn): t.status for t in result.turns}
    assert [status[("syn_00001", k)] for k in range(4)] == [
        "ok",
        "timeout",
        "aborted",
        "aborted",
    ]
    assert [status[("syn_00002", k)] for k in range(4)] == [
        "ok",
        "ok",
        "failed",
        "aborted",
    ]
    assert all(status[("syn_00000", k)] == "ok" for k in range(4))
    timed_out = next(t for t in result.turns if t.status == "timeout")
    assert timed_out.done_s is not None and timed_out.issued_s is not None
    assert timed_out.done_s - timed_out.issued_s == pytest.approx(60.0)
    final = {j.conversation_id: j.status for j in result.trajectories}
    assert final == {"syn_00000": "completed", "syn_00001": "failed",
                     "syn_00002": "failed", "syn_00003": "completed"}  # fmt: skip
    assert not any(
        r.conversation_id == "syn_00001" and r.client_turn > 1 for r in model.requests
    )


@pytest.mark.parametrize("stop", [True, False])
def test_the_window_ends_when_the_first_user_finishes_its_last_trajectory(
    stop: bool,
) -> None:
    data = synthetic_trajectories(6, SHAPE, seed=9)
    model = FakeModel(data)
    settings = AgenticSettings(concurrency=3, stop_issuing_on_first_user_complete=stop)
    result = _run(data, settings, model)
    end = result.window_end_s
    assert end is not None
    # the first user to finish its last trajectory closes it
    last: dict[int, float] = {}
    for j in sorted(result.trajectories, key=lambda j: j.started_s):
        last[j.user] = j.finished_s
    assert len(last) == 3 and end == min(last.values())
    after = [t for t in result.turns if t.issued_s is not None and t.issued_s >= end]
    if stop:
        assert after == []  # nothing issued past the boundary
        assert any(j.status == "stopped" for j in result.trajectories)
    else:
        assert after and not any(result.in_window(t) for t in after)
        assert all(j.status == "completed" for j in result.trajectories)
    before = [t for t in result.turns if t.issued_s is not None and t.issued_s < end]
    assert before and all(result.in_window(t) for t in before)
