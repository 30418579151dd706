"""Routing state of a fleet HTTP SUT: its router, each request's replica, counts.

The HTTP SUT holds one ``Fleet`` when given several URLs and calls it when a
request is sent (``pick``) and when it ends (``done``); with one URL it holds
none, so the single-endpoint path is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import PromptSource
from infermeter.suts.routing import RouteKey, make_router, route_key


class Fleet:
    """Routing state of a fleet SUT: the router, each request's replica, counts.

    Runs on the SUT's event loop only (no locks): ``pick`` when a request is
    sent, ``done`` when it ends.
    """

    def __init__(self, config: OpenAIConfig, prompts: PromptSource) -> None:
        self.urls = config.urls
        self.endpoints = config.endpoints
        self.routing = config.routing
        self.router = make_router(config.routing, len(self.urls))
        self._prompts = prompts
        self._keys: dict[int, RouteKey] = {}
        self._open: dict[int, tuple[int, RouteKey]] = {}
        self.reset()

    def reset(self) -> None:
        n = len(self.urls)
        self.ids: list[int] = []
        self.replicas: list[int] = []
        self.completed = [0] * n
        self.failed = [0] * n

    def pick(self, sid: int, index: int) -> str:
        key = self._key(index)
        replica = self.router.pick(key)
        self._open[sid] = (replica, key)
        self.ids.append(sid)
        self.replicas.append(replica)
        return self.endpoints[replica]

    def done(self, sid: int, *, ok: bool) -> None:
        replica, key = self._open.pop(sid)
        self.router.done(replica, key)
        (self.completed if ok else self.failed)[replica] += 1

    def _key(self, index: int) -> RouteKey:
        if not self.routing.needs_keys:
            return RouteKey()
        key = self._keys.get(index)
        if key is None:
            key = route_key(self._prompts.prompt(index), self.routing.block_size)
            self._keys[index] = key
        return key

    def routes(self) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.asarray(self.ids, dtype=np.int64),
            np.asarray(self.replicas, dtype=np.int64),
        )

    def stats(self) -> dict[str, Any]:
        counts = np.bincount(
            np.asarray(self.replicas, dtype=np.int64), minlength=len(self.urls)
        )
        return {
            "routing": self.routing.policy,
            "replicas": [
                {
                    "url": url,
                    "requests": int(counts[k]),
                    "completed": self.completed[k],
                    "failed": self.failed[k],
                }
                for k, url in enumerate(self.urls)
            ],
        }
