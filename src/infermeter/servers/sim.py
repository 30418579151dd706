"""``serve-sim``: an OpenAI-compatible endpoint whose token timings follow the simulator.

``/v1/completions`` and ``/v1/chat/completions`` (streamed or not), ``/v1/models``,
``/health``, ``/stats``. A request's input length is its prompt's word count
(or token list length), its output length ``max_tokens`` (the simulated model
never stops early). Tokens are coalesced into SSE chunks at most every
``chunk_ms``, but the first chunk leaves at the simulated first-token time and
the last (with ``usage``) at the simulated completion, so any client measures
the simulator's TTFT and TPOT. Results are simulated, never measurements.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import re
import socket
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from infermeter.errors import ConfigError
from infermeter.perfmodel.live import LiveSimulator
from infermeter.perfmodel.prefix_cache import block_hashes
from infermeter.servers.background import (
    SHUTDOWN_TIMEOUT_S,
    ThreadedServer,
    bind_socket,
    new_event_loop,
)
from infermeter.servers.endpoint import OpenAIEndpoint
from infermeter.servers.mock_stream import (
    SSE_HEADERS,
    ParsedRequest,
    full_body,
    parse_request,
    sse_chunk,
    stream_tail,
)
from infermeter.servers.prometheus import Value
from infermeter.servers.sim_driver import SimDriver, TimeBase, Waiter
from infermeter.servers.timing import output_length

TOKEN = "tok "
RID_HEADER = "X-Infermeter-Sim-Request"
ROUTES = ("session", "round-robin")  # serve-sim --route (servers.sim_router)


@dataclass(frozen=True, slots=True)
class SimConfig:
    """The simulated system and how the endpoint presents it."""

    accelerator: str = "h100-sxm"
    count: int = 8
    model: str = "llama2-70b"
    precision: str | None = None
    tp: int | None = None
    time_scale: float = 1.0
    chunk_ms: float = 50.0
    served_model: str = ""  # model name in responses; default: ``model``
    # Prefix cache per model replica, in tokens: -1 = its whole KV cache, 0 = off.
    prefix_cache_tokens: int = -1
    replicas: int = 1  # endpoints, one port each (serve-sim --replicas)
    route: str = ""  # with replicas: a front port routing by session or in turn

    def validate(self) -> None:
        if not self.time_scale > 0:
            raise ConfigError(f"--time-scale must be > 0 (got {self.time_scale:g}).")
        if not self.chunk_ms >= 1:
            raise ConfigError(f"--chunk-ms must be >= 1 (got {self.chunk_ms:g}).")
        if self.replicas < 1:
            raise ConfigError(f"--replicas must be >= 1 (got {self.replicas}).")
        if self.route and self.route not in ROUTES:
            raise ConfigError(
                f"--route {self.route!r}: use one of {', '.join(ROUTES)}."
            )
        if self.prefix_cache_tokens < -1:  # -1 is "its whole KV cache"
            raise ConfigError(
                "--prefix-cache-tokens must be -1 (the whole KV cache), 0 (off) or a "
                f"token count (got {self.prefix_cache_tokens})."
            )

    def simulator(self) -> LiveSimulator:
        """The calibrated live simulator; ``ConfigError`` for unknown or impossible."""
        self.validate()
        return LiveSimulator.for_system(
            self.accelerator,
            self.count,
            self.model,
            precision=self.precision,
            tp=self.tp,
            prefix_cache_tokens=self.prefix_cache_tokens,
        )

    @property
    def name(self) -> str:
        return self.served_model or self.model


class SimApp(OpenAIEndpoint):
    """Request handlers over one ``SimDriver`` (created on the serving loop)."""

    def __init__(self, config: SimConfig, sim: LiveSimulator | None = None) -> None:
        self.config = config
        self.sim = sim or config.simulator()
        self.clock = TimeBase(config.time_scale)
        self.driver: SimDriver | None = None
        self.bad_requests = 0
        self.prompt_tokens = 0

    def on_build(self, app: web.Application) -> None:
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)

    @property
    def model_name(self) -> str:
        return self.config.name

    def stats_snapshot(self) -> dict[str, Any]:
        return self.stats()

    async def _on_startup(self, app: web.Application) -> None:
        self.driver = SimDriver(self.sim, self.clock, asyncio.get_running_loop())

    async def _on_cleanup(self, app: web.Application) -> None:
        if self.driver is not None:
            self.driver.close()

    async def _handle(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        assert self.driver is not None
        try:
            parsed = parse_request(await request.read(), chat=chat, in_flight=0)
            n = output_length(parsed.mock, parsed.mock.max_tokens)
            isl = max(1, parsed.mock.prompt_tokens)
            waiter = self.driver.submit(isl, n, self._blocks(parsed))
            self.prompt_tokens += isl
        except (ValueError, ConfigError) as exc:
            self.bad_requests += 1
            body = {"error": {"message": str(exc), "type": "invalid_request_error"}}
            return web.json_response(body, status=400)
        headers = {RID_HEADER: str(waiter.rid)}
        if not parsed.mock.stream:
            await self.clock.sleep_until(await waiter.done)
            body = full_body(parsed, n, self.config.name, False)
            return web.json_response(body, headers=headers)
        return await self._stream(request, parsed, waiter, headers)

    async def _stream(
        self,
        request: web.Request,
        parsed: ParsedRequest,
        waiter: Waiter,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={**SSE_HEADERS, **headers})
        await response.prepare(request)
        chat, model, n = parsed.chat, self.config.name, waiter.osl
        await self.clock.sleep_until(await waiter.first)
        if n == 1:
            await self._finish(response, parsed, waiter, sent=0)
            return response
        await response.write(sse_chunk(TOKEN, chat, model))
        sent, period = 1, self.config.chunk_ms / 1000.0 / self.config.time_scale
        while True:
            if not waiter.done.done():
                await asyncio.wait([waiter.done], timeout=period)
            elif self.clock.delay_s(waiter.done.result()) < period:
                await self._finish(response, parsed, waiter, sent=sent)
                return response
            else:
                await asyncio.sleep(period)
            # Never the last token here: it leaves at the completion time.
            made = min(self.driver_made(waiter.rid), n - 1)
            if made > sent:
                await response.write(sse_chunk(TOKEN * (made - sent), chat, model))
                sent = made

    def _blocks(self, parsed: ParsedRequest) -> tuple[int, ...]:
        if not self.sim.prefix_caches:
            return ()
        return block_hashes(parsed.words, self.sim.block_size)

    def driver_made(self, rid: int) -> int:
        assert self.driver is not None
        return self.driver.tokens_made(rid)

    async def _finish(
        self,
        response: web.StreamResponse,
        parsed: ParsedRequest,
        waiter: Waiter,
        *,
        sent: int,
    ) -> None:
        await self.clock.sleep_until(await waiter.done)
        n, model = waiter.osl, self.config.name
        last = sse_chunk(TOKEN * (n - sent), parsed.chat, model)
        await response.write(last + stream_tail(parsed, n, model))
        await response.write_eof()

    def metric_values(self) -> list[Value]:
        """The simulator's state under vLLM's metric names (simulated values)."""
        sim = self.sim
        tokens = self.driver.stats.tokens if self.driver is not None else 0
        return [
            Value("gauge", "vllm:num_requests_running", "Requests in a batch.", sim.running),
            Value("gauge", "vllm:num_requests_waiting", "Requests queued.", sim.waiting),
            Value("gauge", "vllm:kv_cache_usage_perc", "KV cache reserved, 0-1.", sim.kv_usage),
            Value("counter", "vllm:prefix_cache_queries", "Prompt tokens looked up.",
                  sim.prefix_query_tokens),
            Value("counter", "vllm:prefix_cache_hits", "Prompt tokens found cached.",
                  sim.prefix_hit_tokens),
            Value("counter", "vllm:num_preemptions", "Preemptions (the model has none).", 0),
            Value("counter", "vllm:prompt_tokens", "Prompt tokens received.", self.prompt_tokens),
            Value("counter", "vllm:generation_tokens", "Tokens generated.", tokens),
        ]  # fmt: skip

    def stats(self) -> dict[str, Any]:
        """Counts of the endpoint and the simulator (plain data)."""
        dep = self.sim.config.deployment
        out: dict[str, Any] = {
            "system": describe(self.config, self.sim),
            "tp": dep.tp,
            "replicas": self.sim.config.replicas,
            "precision": dep.precision,
            "time_scale": self.config.time_scale,
            "in_flight": self.sim.in_flight,
            "bad_requests": self.bad_requests,
            "prefix_query_tokens": self.sim.prefix_query_tokens,
            "prefix_hit_tokens": self.sim.prefix_hit_tokens,
        }
        if self.driver is not None:
            s = self.driver.stats
            out.update(
                requests=s.requests,
                completed=s.completed,
                tokens=s.tokens,
                steps=s.steps,
                late_steps=s.late_steps,
                max_step_lateness_ms=s.max_step_lateness_ns / 1e6,
            )
        return out


def describe(config: SimConfig, sim: LiveSimulator) -> str:
    """E.g. 'simulated 8x H100 SXM (infermeter performance model)'."""
    acc = sim.config.deployment.accelerator
    words = acc.name.split()
    if words and words[0].lower() == acc.vendor.lower():
        words = words[1:]  # "NVIDIA H100 SXM 80GB" -> "H100 SXM"
    if len(words) > 1 and re.fullmatch(r"\d+GB", words[-1]):
        words = words[:-1]
    return f"simulated {config.count}x {' '.join(words)} (infermeter performance model)"


class SimServer(ThreadedServer):
    """The endpoint on a background thread: ``with SimServer(cfg) as url: ...``."""

    thread_name = "infermeter-sim"

    def __init__(
        self, config: SimConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.sim_app = SimApp(config or SimConfig())  # builds (and checks) the system
        super().__init__(self.sim_app, host=host, port=port)


class SimProcess:
    """The endpoint in a child process (its own GIL, so it never delays the client).

    ``with SimProcess(cfg) as url: ...``; names are checked in the parent first,
    so a bad accelerator or model is a one-line ``ConfigError`` here.
    """

    def __init__(self, config: SimConfig, *, host: str = "127.0.0.1") -> None:
        self.sim = config.simulator()
        self.config, self.host, self.port = config, host, 0
        self._process: multiprocessing.process.BaseProcess | None = None
        self.last_stats: dict[str, Any] = {}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> str:
        self._process, port = spawn_server(
            _serve_child, self.config, self.host, "simulated endpoint"
        )
        self.port = int(port)
        return self.url

    def stats(self) -> dict[str, Any]:
        """GET /stats of the running endpoint (the last answer once stopped)."""
        if self._process is not None and self._process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                url = f"http://{self.host}:{self.port}/stats"
                with urllib.request.urlopen(url, timeout=10) as resp:
                    self.last_stats = json.loads(resp.read())
        return self.last_stats

    def stop(self) -> None:
        if self._process is not None:
            self.stats()
            stop_server(self._process)
            self._process = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def spawn_server(
    target: Callable[[SimConfig, str, Any], None],
    config: SimConfig,
    host: str,
    what: str,
) -> tuple[multiprocessing.process.BaseProcess, Any]:
    """Run ``target(config, host, writer)`` in a spawned child; it and what it announced.

    The child sends its port(s) through ``writer`` once it listens; one that says
    nothing within 2 minutes is stopped and reported as one ``ConfigError`` line.
    """
    ctx = multiprocessing.get_context("spawn")
    reader, writer = ctx.Pipe(duplex=False)
    process = ctx.Process(target=target, args=(config, host, writer), daemon=True)
    process.start()
    if not reader.poll(120):
        stop_server(process)
        raise ConfigError(f"the {what} process did not start")
    return process, reader.recv()


def stop_server(process: multiprocessing.process.BaseProcess) -> None:
    process.terminate()
    process.join(10)


def _serve_child(config: SimConfig, host: str, writer: Any) -> None:
    from infermeter.signals import ignore_interrupts

    ignore_interrupts()  # the run drains its requests after Ctrl-C, then stops us
    serve(
        config,
        host=host,
        port=0,
        announce=lambda port, app: writer.send(port),
        handle_signals=False,
    )


def serve(
    config: SimConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    announce: Callable[[int, SimApp], None] | None = None,
    handle_signals: bool = True,
) -> None:
    """Serve in the foreground until interrupted; ``announce`` gets the bound port.

    ``handle_signals=False``: Ctrl-C and SIGTERM keep their process-wide
    handling (a run's child ignores Ctrl-C and ends on the parent's SIGTERM).
    """
    app = SimApp(config)
    sock: socket.socket = bind_socket(host, port, reuse_port=False)
    if announce is not None:
        announce(int(sock.getsockname()[1]), app)
    web.run_app(
        app.build(),
        sock=sock,
        print=None,
        handler_cancellation=True,
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
        handle_signals=handle_signals,
        loop=new_event_loop(),
    )
