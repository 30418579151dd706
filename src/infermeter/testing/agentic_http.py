"""``replay``: one agentic run against an endpoint, for tests and benchmark scripts."""

from __future__ import annotations

from typing import Any

from infermeter.runs.agentic import AgenticLoad, AgenticResult, AgenticSettings
from infermeter.suts.agentic_http import AioChatTurn
from infermeter.workloads.agentic.trajectories import Trajectory


async def replay(
    url: str,
    model: str,
    trajectories: list[Trajectory],
    settings: AgenticSettings,
    *,
    fields: dict[str, Any] | None = None,
) -> AgenticResult:
    """One agentic run of ``trajectories`` against the endpoint at ``url``."""
    async with AioChatTurn(url, model, fields=fields) as send:
        return await AgenticLoad(trajectories, settings, send).run()
