"""An agentic run against serve-mock over HTTP: 64 synthetic trajectories, 8 users.

What the server received is checked, not what the client meant to send:
every request carries the conversation so far, the model's own answers and
the tool results included; the session header is the conversation's; salts
follow the seed; each turn leaves its tool delay after the last one ended.
Timestamps are real here (loopback, a busy machine), so the checks are
orderings and lower bounds with generous slack, never rates.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import pytest

from infermeter.runs.agentic import AgenticResult, AgenticSettings
from infermeter.runs.agentic_metrics import agentic_metrics
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.servers.mock_agentic import THINK, AgenticStream
from infermeter.testing.agentic_http import replay
from infermeter.workloads.agentic.synth import TrajectoryShape, synthetic_trajectories
from infermeter.workloads.agentic.trajectories import Trajectory

pytestmark = pytest.mark.integration

SHAPE = TrajectoryShape(
    client_turns=(2, 4),
    system_tokens=30,
    user_tokens=(5, 15),
    tool_result_tokens=(5, 15),
    output_tokens=(6, 10),
    tool_call_share=0.7,
    delay_s=(0.02, 0.08),
)
REASONING = 3  # at most: a short answer has fewer
SLACK_S = 0.002  # timer granularity: a sleep never ends sooner than this early


def _mock() -> MockServer:
    config = MockConfig(
        mode="timed",
        ttft="const:0.002",
        itl="const:0.0005",
        agentic=AgenticStream(REASONING, "reasoning_content", "when-tools"),
    )
    return MockServer(config)


def _run(
    data: list[Trajectory], seed: int, server: MockServer, url: str
) -> tuple[AgenticResult, list[dict[str, Any]]]:
    server.mock.requests.entries.clear()

    settings = AgenticSettings(concurrency=8, seed=seed, turn_timeout_s=60.0)
    result = asyncio.run(replay(url, "mock-model", data, settings))
    return result, list(server.mock.requests.entries)


def test_sixty_four_trajectories_at_concurrency_eight() -> None:
    data = synthetic_trajectories(64, SHAPE, seed=11)
    server = _mock()
    with server as url:
        result, received = _run(data, 1, server, url)
        # salts depend on the seed and the conversation only: a smaller dataset
        # of the same conversations shows them
        again, _ = _run(data[:16], 1, server, url)
        other, _ = _run(data[:16], 2, server, url)
    assert all(t.status == "ok" for t in result.turns)
    assert len(received) == sum(len(t.client_turns()) for t in data)
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in received:
        by_session[entry["session"]].append(entry)
    # one session per conversation, constant within it, distinct across them
    assert sorted(by_session) == sorted(t.conversation_id for t in data)
    by_id = {t.conversation_id: t for t in data}
    for cid, entries in by_session.items():
        _check_bodies(by_id[cid], entries, result.salts[cid])
    # the same seed gives the same salts, another seed others
    assert again.salts == {c: result.salts[c] for c in again.salts}
    assert len(other.salts) == 16
    assert all(other.salts[c] != result.salts[c] for c in other.salts)
    _check_delays(result, by_id, by_session)
    metrics = agentic_metrics(result, data)
    assert metrics.trajectories_completed == 64 and metrics.turns_failed == 0
    assert metrics.ttft_p90_ms is not None and metrics.e2e_avg_interactivity
    assert metrics.accuracy is not None and metrics.accuracy.scored > 0


def _check_bodies(
    t: Trajectory, entries: list[dict[str, Any]], salt: tuple[str, str]
) -> None:
    turns = t.client_turns()
    assert len(entries) == len(turns)
    for k, (ct, entry) in enumerate(zip(turns, entries, strict=True)):
        messages = entry["messages"]
        system = messages[0]
        assert system["role"] == "system"
        assert system["content"].startswith(f"[salt: {salt[0]}]\n\n{t.system}")
        assert system["content"].endswith(f"[salt: {salt[1]}]")
        # the model's own earlier answers (the mock's: reasoning, then a call)
        answers = [m for m in messages if m["role"] == "assistant"]
        assert len(answers) == k
        assert all(
            set(m["reasoning_content"].split()) == {THINK.strip()} for m in answers
        )
        assert all(m["tool_calls"][0]["id"] == "call_mock_0" for m in answers)
        # every earlier client turn, tool results re-addressed to the model's call
        sent = [m for m in messages if m["role"] in ("user", "tool")]
        want = [m for c in turns[: k + 1] for m in c.row.messages()]
        assert [m["content"] for m in sent] == [m["content"] for m in want]
        assert all(
            m["tool_call_id"] == "call_mock_0" for m in sent if m["role"] == "tool"
        )
        assert messages[-1]["content"] == ct.row.messages()[-1]["content"]
        if k:
            previous = entries[k - 1]["messages"]
            assert messages[: len(previous)] == previous


def _check_delays(
    result: AgenticResult,
    by_id: dict[str, Trajectory],
    by_session: dict[str, list[dict[str, Any]]],
) -> None:
    turns = {(t.conversation_id, t.client_turn): t for t in result.turns}
    checked = 0
    for cid, entries in by_session.items():
        cts = by_id[cid].client_turns()
        for k in range(1, len(cts)):
            turn, before = turns[(cid, k)], turns[(cid, k - 1)]
            assert turn.issued_s is not None and before.done_s is not None
            # the client issued it a tool delay after the last answer ended ...
            assert turn.ready_s == before.done_s
            assert turn.issued_s - before.done_s >= cts[k].delay_s - SLACK_S
            # ... and the server saw the two requests at least that far apart
            gap = entries[k]["time_s"] - entries[k - 1]["time_s"]
            assert gap >= cts[k].delay_s - SLACK_S
            checked += 1
    assert checked > 64
