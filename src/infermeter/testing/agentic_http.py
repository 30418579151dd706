"""``replay``: one agentic run against an endpoint, for tests and benchmark scripts."""

from __future__ import annotations

from typing import Any

from infermeter.runs.agentic import AgenticLoad, AgenticResult, AgenticSettings
from infermeter.suts.agentic_http import ChatTurns
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, Timeouts
from infermeter.workloads.agentic.trajectories import Trajectory


async def replay(
    url: str,
    model: str,
    trajectories: list[Trajectory],
    settings: AgenticSettings,
    *,
    fields: dict[str, Any] | None = None,
    api_key: ApiKey | None = None,
    timeouts: Timeouts | None = None,
) -> AgenticResult:
    """One agentic run of ``trajectories`` against the endpoint at ``url``,
    through the HTTP client's exchange as ``infermeter agentic run`` sends it
    (no total timeout unless ``timeouts`` gives one: the turn timeout rules)."""
    timeouts = timeouts or Timeouts(total_s=0.0)
    config = OpenAIConfig(url, model, api="chat", timeouts=timeouts)
    async with ChatTurns(config, fields=fields, api_key=api_key) as send:
        return await AgenticLoad(trajectories, settings, send).run()
