"""The routes every OpenAI-compatible endpoint of infermeter serves (mock and simulated).

Subclasses answer completions; this class owns the URL layout, ``/v1/models``,
``/health``, ``/stats`` and ``/metrics`` (Prometheus text, vLLM names).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import Any

from aiohttp import web

from infermeter.servers.prometheus import CONTENT_TYPE, Exporter, Value

MAX_BODY = 64 * 1024 * 1024  # long prompts are fine; a runaway body is not


class OpenAIEndpoint(ABC):
    """``/v1/completions``, ``/v1/chat/completions``, ``/v1/models``, ``/health``, ``/stats``."""

    def build(self) -> web.Application:
        """A fresh aiohttp application with every route."""
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_get("/stats", self._stats)
        app.router.add_get("/metrics", self._metrics)
        self.on_build(app)
        return app

    def on_build(self, app: web.Application) -> None:  # noqa: B027 - optional hook
        """Hook for startup / cleanup handlers."""

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model id /v1/models lists."""

    @abstractmethod
    async def _handle(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        """Answer one completion request."""

    @abstractmethod
    def stats_snapshot(self) -> dict[str, Any]:
        """What /stats returns (plain data)."""

    @cached_property
    def _exporter(self) -> Exporter:
        return Exporter(self.metric_values, self.model_name)

    def metric_values(self) -> list[Value]:
        """What /metrics exports (vLLM names); read at every scrape."""
        return []

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, chat=False)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, chat=True)

    async def _models(self, request: web.Request) -> web.Response:
        data = [{"id": self.model_name, "object": "model", "owned_by": "infermeter"}]
        return web.json_response({"object": "list", "data": data})

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats_snapshot())

    async def _metrics(self, request: web.Request) -> web.Response:
        body = self._exporter.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})
