"""serve-sim --replicas N --route: session routing keeps a conversation's prefix warm.

The same agentic run goes through the front router twice, by session and
in turn. Each replica has its own simulated prefix cache, so only session
routing finds a conversation's earlier turns cached on its next turn: its
prefix hit rate must be well above round-robin's (counts, not timings).
"""

from __future__ import annotations

import asyncio

import pytest

from infermeter.errors import ConfigError
from infermeter.runs.agentic import AgenticSettings
from infermeter.servers.sim import SimConfig
from infermeter.servers.sim_fleet import SimFleetProcess
from infermeter.servers.sim_router import SessionRouter
from infermeter.testing.agentic_http import replay
from infermeter.workloads.agentic.synth import TrajectoryShape, synthetic_trajectories

SHAPE = TrajectoryShape(
    client_turns=(4, 6),
    system_tokens=64,
    user_tokens=(40, 80),
    tool_result_tokens=(40, 80),
    output_tokens=(4, 8),
    delay_s=(0.0, 0.0),
)


def test_the_session_router_sticks_and_balances_new_sessions() -> None:
    router = SessionRouter(3, "session")
    picks = [router.pick(s) for s in ("a", "b", "c", "a", "d", "b", "a")]
    assert picks == [0, 1, 2, 0, 0, 1, 0]
    assert router.sessions == [2, 1, 1] and router.routed == [4, 2, 1]
    assert [router.pick(None) for _ in range(4)] == [0, 1, 2, 0]  # no header: in turn
    in_turn = SessionRouter(3, "round-robin")
    assert [in_turn.pick("a") for _ in range(4)] == [0, 1, 2, 0]
    with pytest.raises(ConfigError, match="--route 'sticky': use one of session"):
        SimConfig(replicas=2, route="sticky").validate()


@pytest.mark.integration
def test_session_routing_finds_more_of_each_conversation_cached() -> None:
    rates = {}
    for route in ("session", "round-robin"):
        data = synthetic_trajectories(9, SHAPE, seed=4)
        config = SimConfig(
            accelerator="h100-sxm", count=1, tp=1, model="llama3.1-8b",
            time_scale=20.0, replicas=4, route=route,
        )  # fmt: skip
        fleet = SimFleetProcess(config)
        with fleet as urls:
            # 3 users on 4 replicas: round-robin's turn counter moves about 3
            # between two turns of one conversation, so it does not land on the
            # same replica by accident (with 4 users it would, most of the time).
            settings = AgenticSettings(concurrency=3, seed=1, turn_timeout_s=60.0)
            result = asyncio.run(replay(urls[0], "llama3.1-8b", data, settings))
            front = fleet.stats()[0]
        assert all(t.status == "ok" for t in result.turns)
        assert sum(front["routed"]) == len(result.turns)
        rates[route] = front["prefix_hit_rate"]
    assert rates["session"] > rates["round-robin"] + 0.2
