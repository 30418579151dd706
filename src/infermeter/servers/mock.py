"""OpenAI-compatible mock server (aiohttp): echo, max-throughput, timed and fault modes.

``/v1/completions`` and ``/v1/chat/completions``, streamed (SSE) or not, plus the
multimodal routes of ``mock_media`` (transcriptions, images, videos). Token
timing comes from a pluggable ``TokenTiming``; faults from a ``FaultPicker``.
``GET /received`` lists what the latest multimodal requests carried;
``GET /mock/requests`` the server-side times of every completion (``mock_served``).
``MockServer`` runs it on its own thread (tests); ``serve`` runs it in the
foreground, optionally as several processes on one port (SO_REUSEPORT).
"""

from __future__ import annotations

import multiprocessing
import socket
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from infermeter.errors import ConfigError
from infermeter.servers.background import (
    SHUTDOWN_TIMEOUT_S,
    ThreadedServer,
    bind_socket,
    new_event_loop,
)
from infermeter.servers.endpoint import OpenAIEndpoint
from infermeter.servers.faults import Fault, FaultConfig, FaultPicker
from infermeter.servers.mock_agentic import AgenticStream, RequestLog, respond_agentic
from infermeter.servers.mock_lean import LeanMock, run_lean
from infermeter.servers.mock_media import MediaRoutes
from infermeter.servers.mock_served import ServedLog, Stamp
from infermeter.servers.mock_stream import (
    STYLES,
    ParsedRequest,
    parse_request,
    respond,
)
from infermeter.servers.prometheus import Value, mock_values
from infermeter.servers.timing import (
    Distribution,
    DistributionTiming,
    InstantTiming,
    TokenTiming,
)

MODES = ("echo", "max-throughput", "timed", "faults")
SERVERS = ("aiohttp", "lean")  # lean: max-throughput only, a fraction of the CPU
RECEIVED = 256  # multimodal request summaries kept for GET /received


@dataclass(frozen=True, slots=True)
class MockConfig:
    """Everything that defines a mock server; plain data, so worker processes get it.

    ``ttft``, ``itl`` and ``output_tokens`` are ``Distribution`` specs (seconds,
    seconds, tokens) used by ``timed`` and ``faults`` modes.
    """

    mode: str = "max-throughput"
    model: str = "mock-model"
    ttft: str = "const:0.05"
    itl: str = "const:0.01"
    output_tokens: str | None = None
    faults: FaultConfig = field(default_factory=FaultConfig)
    seed: int = 0
    # "llama.cpp": streams as llama.cpp does (no usage even when asked, an
    # empty-text chunk for a token that splits a UTF-8 character, a role-only
    # first chat chunk, a finish-only last chunk).
    style: str = "openai"
    # Answer HTTP 404 to a model name other than ``model`` (as vLLM does).
    check_model: bool = False
    # /v1/videos answers with the video itself instead of a job to poll.
    video_sync: bool = False
    # Chat answers with reasoning, then text or tool-call deltas (mock_agentic).
    agentic: AgenticStream = field(default_factory=AgenticStream)
    # "lean": the max-throughput answers on a raw protocol (mock_lean), for
    # client benchmarks where the aiohttp server would be the limit.
    server: str = "aiohttp"
    # Lean server only: streams in chunked encoding, one chunk per SSE event.
    chunked: bool = False

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(
                f"Unknown mock mode {self.mode!r}. Known modes: {', '.join(MODES)}"
            )
        if self.server not in SERVERS:
            raise ConfigError(
                f"Unknown mock server {self.server!r}. Known: {', '.join(SERVERS)}"
            )
        if self.server == "lean":
            self._validate_lean()
        elif self.chunked:
            raise ConfigError("--chunked needs --server lean")
        if self.style not in STYLES:
            raise ConfigError(
                f"Unknown mock style {self.style!r}. Known: {', '.join(STYLES)}"
            )
        self.faults.validate()
        self.agentic.validate()
        for spec in (self.ttft, self.itl, self.output_tokens):
            if spec is not None:
                Distribution.parse(spec)

    def _validate_lean(self) -> None:
        unsupported = [
            name
            for name, used in (
                (f"--mode {self.mode}", self.mode != "max-throughput"),
                (f"--style {self.style}", self.style != "openai"),
                ("agentic answers", self.agentic.active),
                ("--video-sync", self.video_sync),
            )
            if used
        ]
        if unsupported:
            raise ConfigError(
                f"--server lean does not serve {', '.join(unsupported)}: it serves "
                "--mode max-throughput only; use --server aiohttp for the rest"
            )

    def timing(self, seed_offset: int = 0) -> TokenTiming:
        """The timing this mode uses (``timed`` and ``faults`` follow distributions)."""
        if self.mode in ("echo", "max-throughput"):
            return InstantTiming()
        out = Distribution.parse(self.output_tokens) if self.output_tokens else None
        return DistributionTiming(
            ttft_s=Distribution.parse(self.ttft),
            itl_s=Distribution.parse(self.itl),
            output_tokens=out,
            seed=self.seed + seed_offset,
        )


class MockApp(OpenAIEndpoint):
    """The request handlers and their counters."""

    def __init__(
        self,
        config: MockConfig,
        *,
        timing: TokenTiming | None = None,
        seed_offset: int = 0,
    ) -> None:
        config.validate()
        self.config = config
        self.timing = timing or config.timing(seed_offset)
        self.picker = (
            FaultPicker(config.faults, config.seed + seed_offset)
            if config.mode == "faults"
            else None
        )
        self.stats: Counter[str] = Counter()
        self.in_flight = 0
        self.received: deque[dict[str, Any]] = deque(maxlen=RECEIVED)
        self.media = MediaRoutes(self)
        self.requests = RequestLog()
        self.served = ServedLog()

    def on_build(self, app: web.Application) -> None:
        self.media.add(app)
        app.router.add_get("/received", self._received)
        app.router.add_get("/mock/requests", self.served.handler)
        app.router.add_get("/agentic/requests", self.requests.handler)

    def record(self, route: str, summary: dict[str, Any]) -> None:
        """Keep what a multimodal request carried (the latest ``RECEIVED`` of them)."""
        self.received.append({"route": route, **summary})

    async def _received(self, request: web.Request) -> web.Response:
        return web.json_response(list(self.received))

    @property
    def model_name(self) -> str:
        return self.config.model

    def stats_snapshot(self) -> dict[str, Any]:
        return dict(self.stats)

    def metric_values(self) -> list[Value]:
        """vLLM-named counts the mock knows (it has no KV cache to report)."""
        return mock_values(self.stats, self.in_flight)

    async def _handle(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        self.stats["requests"] += 1
        if "Authorization" in request.headers:  # never logged, only counted
            self.stats["with_authorization"] += 1
        body = await request.read()
        stamp = self.served.receive()
        self.requests.add(request, body)
        try:
            parsed = parse_request(
                body,
                chat=chat,
                in_flight=self.in_flight,
                style=self.config.style,
            )
        except ValueError as exc:
            self.stats["bad_request"] += 1
            return _error(400, str(exc), "invalid_request_error")
        stamp.prompt(parsed.words)
        if self.config.check_model and parsed.model != self.config.model:
            self.stats["unknown_model"] += 1
            return _error(
                404, f"The model `{parsed.model}` does not exist.", "NotFoundError"
            )
        self.stats["prompt_tokens"] += parsed.mock.prompt_tokens
        if parsed.media:
            self.record("chat", {"media": list(parsed.media)})
        fault = self.picker.pick() if self.picker else Fault.NONE
        self.stats[f"fault_{fault.value}"] += fault is not Fault.NONE
        if fault is Fault.ERROR:
            return _error(
                self.config.faults.error_status, "injected fault", "server_error"
            )
        self.in_flight += 1
        try:
            return await self._respond(request, parsed, fault, stamp)
        finally:
            self.in_flight -= 1

    async def _respond(
        self,
        request: web.Request,
        parsed: ParsedRequest,
        fault: Fault,
        stamp: Stamp,
    ) -> web.StreamResponse:
        plan = self.timing.plan(parsed.mock)
        if parsed.chat and self.config.agentic.active and fault is Fault.NONE:
            response = await respond_agentic(
                request,
                parsed,
                plan,
                self.config.agentic,
                model=self.config.model,
                stamp=stamp,
            )
        else:
            response = await respond(
                request,
                parsed,
                plan,
                fault=fault,
                faults=self.config.faults,
                model=self.config.model,
                echo=self.config.mode == "echo",
                stamp=stamp,
            )
        if fault is Fault.NONE or fault is Fault.SLOW_FIRST_BYTE:
            self.stats["completed"] += 1
            self.stats["tokens"] += plan.n_tokens
        return response


def _error(status: int, message: str, kind: str) -> web.Response:
    body = {"error": {"message": message, "type": kind, "code": status}}
    return web.json_response(body, status=status)


class MockServer(ThreadedServer):
    """A mock server on a background thread; ``with MockServer(cfg) as url: ...``."""

    thread_name = "infermeter-mock"

    def __init__(
        self,
        config: MockConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        timing: TokenTiming | None = None,
    ) -> None:
        self.mock = MockApp(config or MockConfig(), timing=timing)
        super().__init__(self.mock, host=host, port=port)

    def restart(self) -> None:
        """Stop, then start again on the same port (a server restart mid-run)."""
        self.stop()
        self.mock.in_flight = 0
        self.start()


class MockProcess:
    """A mock server in a child process (no GIL shared with the client under test).

    ``with MockProcess(cfg) as url: ...``; ``workers`` processes share the port.
    """

    def __init__(
        self,
        config: MockConfig,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        workers: int = 1,
    ) -> None:
        config.validate()
        self.config = config
        self.host = host
        self.port = port
        self.workers = workers
        self._process: multiprocessing.process.BaseProcess | None = None

    def start(self) -> str:
        ctx = multiprocessing.get_context("spawn")
        reader, writer = ctx.Pipe(duplex=False)
        self._process = ctx.Process(
            target=_serve_child,
            args=(self.config, self.host, self.port, self.workers, writer),
            # A daemon process may not start the other server processes; stop()
            # terminates this one, which stops them.
            daemon=self.workers == 1,
        )
        self._process.start()
        for _ in range(600):
            if reader.poll(0.1):
                self.port = int(reader.recv())
                break
            if not self._process.is_alive():
                break
        else:
            self.stop()
        if self._process is None or not self._process.is_alive():
            raise ConfigError(
                "the mock server process did not start; is the port free?"
            )
        return f"http://{self.host}:{self.port}/v1"

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.join(10)
            self._process = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serve_child(
    config: MockConfig, host: str, port: int, workers: int, writer: Any
) -> None:
    if workers > 1 and port == 0:
        port = _free_port(host)
    serve(config, host=host, port=port, workers=workers, announce=writer.send)


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def serve(
    config: MockConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    announce: Callable[[int], None] | None = None,
    request_log: Path | None = None,
) -> None:
    """Serve until interrupted; ``workers`` processes share the port (SO_REUSEPORT).

    ``announce`` gets the bound port (useful with port 0) before serving starts;
    ``request_log`` gets the per-request log (``mock_served``) when serving ends.
    """
    config.validate()
    if workers > 1 and port == 0:
        raise ConfigError("--workers > 1 needs a fixed --port (not 0)")
    if request_log is not None and workers > 1:
        # Each process keeps its own log; one file could hold only one of them.
        raise ConfigError("--request-log needs --workers 1 (each process logs apart)")
    sock = bind_socket(host, port, reuse_port=workers > 1)
    children = [
        multiprocessing.get_context("spawn").Process(
            target=_serve_one, args=(config, host, port, i), daemon=True
        )
        for i in range(1, workers)
    ]
    for child in children:
        child.start()
    if announce is not None:
        announce(int(sock.getsockname()[1]))
    mock = _app(config, 0)
    try:
        _run(mock, sock)
    finally:
        for child in children:
            child.terminate()
        if request_log is not None:
            mock.served.write(request_log)


def _app(config: MockConfig, seed_offset: int) -> MockApp | LeanMock:
    if config.server == "lean":
        return LeanMock(
            config.model, check_model=config.check_model, chunked=config.chunked
        )
    return MockApp(config, seed_offset=seed_offset)


def _run(mock: MockApp | LeanMock, sock: socket.socket) -> None:
    if isinstance(mock, LeanMock):
        run_lean(mock, sock)
    else:
        _run_app(mock, sock)


def _serve_one(config: MockConfig, host: str, port: int, index: int) -> None:
    _run(_app(config, index), bind_socket(host, port, reuse_port=True))


def _run_app(app: MockApp, sock: socket.socket) -> None:
    web.run_app(
        app.build(),
        sock=sock,
        print=None,
        handler_cancellation=True,
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
        loop=new_event_loop(),
    )
