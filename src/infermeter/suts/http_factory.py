"""Picks the HTTP client's transport from its options: this process, worker processes or Ray.

Above the three transports (``http_local``, ``http_workers``, ``ray_actors``),
each of which speaks the engine's ``SystemUnderTest`` interface and runs the
same exchange per sample; what runs above any of them (the ``openai`` SUT,
endpoint sweeps) asks here for one.
"""

from __future__ import annotations

from infermeter.clock import Clock
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.http_workers import MultiProcessHttpSUT
from infermeter.suts.openai_request import ApiKey, OpenAIConfig
from infermeter.suts.prompts import PromptSource
from infermeter.suts.ray_actors import RayHttpSUT

HttpSUT = OpenAIHttpSUT | MultiProcessHttpSUT | RayHttpSUT


def create_http_sut(
    config: OpenAIConfig,
    prompts: PromptSource,
    *,
    api_key: ApiKey | None = None,
    clock: Clock | None = None,
) -> HttpSUT:
    """One process, ``config.workers`` client processes, or Ray actors when asked for."""
    if config.ray is not None:
        return RayHttpSUT(
            config,
            prompts,
            address=config.ray,
            actors=config.ray_actors,
            api_key=api_key,
            clock=clock,
        )
    if config.workers > 1:
        return MultiProcessHttpSUT(config, prompts, api_key=api_key, clock=clock)
    return OpenAIHttpSUT(config, prompts, api_key=api_key, clock=clock)
