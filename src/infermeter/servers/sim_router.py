"""``serve-sim --replicas N --route POLICY``: one port in front of the replicas.

A serving stack's router decides which replica's prefix cache a request
meets. ``session`` keeps every request of a conversation (its
``X-Session-ID``) on one replica, the first request of a session going to the
replica holding the fewest sessions; requests without the header go round
the replicas in turn. ``round-robin`` ignores sessions. Each replica keeps
its own simulated prefix cache, so a conversation's later turns find their
earlier turns cached only where the router kept them together. Simulated
figures, not measurements.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from infermeter.servers.endpoint import OpenAIEndpoint
from infermeter.servers.sim import SimApp
from infermeter.workloads.agentic.turns import SESSION_HEADER


class SessionRouter:
    """Which replica answers: sticky per session, or in turn (``SimConfig.route``)."""

    def __init__(self, replicas: int, policy: str) -> None:
        self.policy = policy
        self.homes: dict[str, int] = {}
        self.sessions = [0] * replicas
        self.routed = [0] * replicas
        self._turn = 0

    def pick(self, session: str | None) -> int:
        if self.policy == "session" and session:
            home = self.homes.get(session)
            if home is None:
                home = min(range(len(self.sessions)), key=self.sessions.__getitem__)
                self.homes[session] = home
                self.sessions[home] += 1
            k = home
        else:
            k = self._turn % len(self.routed)
            self._turn += 1
        self.routed[k] += 1
        return k


class FrontApp(OpenAIEndpoint):
    """The front port: routes each request to a replica and answers through it."""

    def __init__(self, replicas: list[SimApp], policy: str) -> None:
        self.replicas = replicas
        self.router = SessionRouter(len(replicas), policy)

    @property
    def model_name(self) -> str:
        return self.replicas[0].model_name

    async def _handle(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        replica = self.replicas[self.router.pick(request.headers.get(SESSION_HEADER))]
        handler = replica._chat if chat else replica._completions
        return await handler(request)

    def stats_snapshot(self) -> dict[str, Any]:
        stats = [r.stats() for r in self.replicas]
        queried = sum(s["prefix_query_tokens"] for s in stats)
        hits = sum(s["prefix_hit_tokens"] for s in stats)
        return {
            "route": self.router.policy,
            "routed": list(self.router.routed),
            "sessions": len(self.router.homes),
            "prefix_query_tokens": queried,
            "prefix_hit_tokens": hits,
            "prefix_hit_rate": hits / queried if queried else None,
            "replicas": stats,
        }
