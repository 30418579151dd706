"""``serve-sim --replicas N``: N simulated replicas, one port each, in one process.

Each replica is a whole simulated endpoint (its own live simulator, KV cache
and prefix cache) on its own port, so a client routes between them as it
would between the replicas of a real deployment. With ``--route`` a front
port (the first) routes for the client, by session or in turn
(``servers.sim_router``). All share one event loop. Figures measured against
them are simulated, not measurements.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import urllib.request
from collections.abc import Callable
from typing import Any

from aiohttp import web

from infermeter.errors import ConfigError
from infermeter.servers.background import app_runner, bind_socket, new_event_loop
from infermeter.servers.endpoint import OpenAIEndpoint
from infermeter.servers.sim import SimApp, SimConfig, spawn_server, stop_server
from infermeter.servers.sim_router import FrontApp


def fleet_ports(port: int, replicas: int) -> list[int]:
    """Ports to bind: ``port`` .. ``port + N - 1``, or any free ones for port 0."""
    return [0] * replicas if port == 0 else [port + i for i in range(replicas)]


async def _start(apps: list[OpenAIEndpoint], host: str, ports: list[int]) -> list[int]:
    bound: list[int] = []
    for app, port in zip(apps, ports, strict=True):
        runner = app_runner(app.build())
        await runner.setup()
        try:
            sock = bind_socket(host, port, reuse_port=False)
        except OSError as exc:
            raise ConfigError(
                f"Cannot serve replica {len(bound)} on {host}:{port} ({exc.strerror}); "
                "choose another --port, or --port 0 for any free ports."
            ) from None
        bound.append(int(sock.getsockname()[1]))
        await web.SockSite(runner, sock).start()
    return bound


def serve_fleet(
    config: SimConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    announce: Callable[[list[int], list[SimApp]], None] | None = None,
) -> None:
    """Serve ``config.replicas`` endpoints in the foreground until interrupted.

    With ``config.route`` the first bound port is the front router's.
    """
    apps = [SimApp(config) for _ in range(config.replicas)]
    served: list[OpenAIEndpoint] = list(apps)
    if config.route:
        served.insert(0, FrontApp(apps, config.route))
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    bound = loop.run_until_complete(
        _start(served, host, fleet_ports(port, len(served)))
    )
    if announce is not None:
        announce(bound, apps)
    try:
        loop.run_forever()
    finally:
        loop.close()


class SimFleetProcess:
    """The replicas in a child process: ``with SimFleetProcess(cfg) as urls: ...``."""

    def __init__(self, config: SimConfig, *, host: str = "127.0.0.1") -> None:
        config.simulator()  # bad names fail here, as one line
        self.config, self.host = config, host
        self.ports: list[int] = []
        self._process: multiprocessing.process.BaseProcess | None = None
        self.last_stats: list[dict[str, Any]] = []

    @property
    def urls(self) -> list[str]:
        """Every served port's base URL (the front router's first with a route)."""
        return [f"http://{self.host}:{p}/v1" for p in self.ports]

    @property
    def front_url(self) -> str:
        """The router's URL (``--route``), else the first replica's."""
        return self.urls[0]

    def start(self) -> list[str]:
        self._process, ports = spawn_server(
            _serve_child, self.config, self.host, "simulated fleet"
        )
        self.ports = list(ports)
        return self.urls

    def stats(self) -> list[dict[str, Any]]:
        """GET /stats of every replica (the last answers once stopped)."""
        if self._process is not None and self._process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                self.last_stats = [
                    _get_json(f"http://{self.host}:{p}/stats") for p in self.ports
                ]
        return self.last_stats

    def stop(self) -> None:
        if self._process is not None:
            self.stats()
            stop_server(self._process)
            self._process = None

    def __enter__(self) -> list[str]:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    return data


def _serve_child(config: SimConfig, host: str, writer: Any) -> None:
    from infermeter.signals import ignore_interrupts

    ignore_interrupts()  # as the single endpoint's child: the parent stops us
    serve_fleet(
        config, host=host, port=0, announce=lambda ports, apps: writer.send(ports)
    )
