"""``infermeter serve-sim``: an OpenAI-compatible endpoint timed by the performance model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from infermeter.cli.main import app, err_console

if TYPE_CHECKING:  # the server (aiohttp) loads only when this command runs
    from infermeter.servers.sim import SimApp, SimConfig


@app.command("serve-sim")
def serve_sim_command(
    accelerator: Annotated[
        str, typer.Option(help="Accelerator (infermeter model specs).")
    ] = "h100-sxm",
    count: Annotated[int, typer.Option(help="How many accelerators.")] = 8,
    model: Annotated[str, typer.Option(help="Model architecture.")] = "llama2-70b",
    precision: Annotated[
        str | None,
        typer.Option(help="fp16, bf16, fp8 or fp4 (default: lowest native)."),
    ] = None,
    tp: Annotated[
        int | None, typer.Option(help="Tensor-parallel size (default: best).")
    ] = None,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="TCP port (0 = any free port).")
    ] = 8000,
    time_scale: Annotated[
        float, typer.Option(help="Simulated seconds per real second.")
    ] = 1.0,
    chunk_ms: Annotated[
        float, typer.Option(help="Coalesce streamed tokens into chunks this often.")
    ] = 50.0,
    served_model: Annotated[
        str | None, typer.Option(help="Model name in responses (default: --model).")
    ] = None,
    replicas: Annotated[
        int,
        typer.Option(
            help="Serve N replicas of the system, one port each (--port, --port + 1, "
            "...; any free ports with --port 0), for fleet routing."
        ),
    ] = 1,
    prefix_cache_tokens: Annotated[
        int,
        typer.Option(
            help="Prefix cache per model replica in tokens (LRU); -1 = its whole "
            "KV cache, 0 = no prefix caching."
        ),
    ] = -1,
    route: Annotated[
        str | None,
        typer.Option(
            help="With --replicas: also serve a router on --port (replicas on the "
            "next ports): session (X-Session-ID sticks to a replica) or round-robin."
        ),
    ] = None,
) -> None:
    """Serve a simulated system's /v1/completions and /v1/chat/completions until Ctrl-C.

    Token timings follow infermeter's calibrated performance model in real time
    (continuous batching, chunked prefill, KV admission, tensor parallelism):
    any OpenAI client can benchmark the simulated system. Input length = the
    prompt's words; output length = max_tokens. The first chunk leaves at the
    simulated first-token time and the last one (with usage) at the simulated
    completion. Figures measured against it are simulated, not measurements.
    GET /stats shows the simulator's counts; GET /metrics exports them under
    vLLM's Prometheus names (running, waiting, KV cache usage, prefix cache
    queries and hits). A prompt's cached prefix (16-word blocks, LRU per model
    replica) skips its prefill.

    Examples:

      infermeter serve-sim --accelerator h100-sxm --count 8 --model llama2-70b

      infermeter serve-sim --accelerator h200-sxm --count 8 --precision fp8 --port 0

      infermeter serve-sim --time-scale 2 --chunk-ms 200

      infermeter serve-sim --replicas 4 --port 8001 --count 2 --tp 2

      infermeter serve-sim --replicas 4 --route session --count 1 --tp 1 --model llama3.1-8b
    """
    from infermeter.errors import ConfigError
    from infermeter.servers.sim import SimConfig, describe, serve

    config = SimConfig(
        accelerator=accelerator,
        count=count,
        model=model,
        precision=precision,
        tp=tp,
        time_scale=time_scale,
        chunk_ms=chunk_ms,
        served_model=served_model or "",
        prefix_cache_tokens=prefix_cache_tokens,
        replicas=replicas,
        route=route or "",
    )
    config.validate()
    ports = replicas + (1 if route else 0)
    if port and port + ports - 1 > 65535:  # one port per replica, upward
        raise ConfigError(
            f"--port {port} with --replicas {replicas} runs past port 65535; "
            f"use --port {65536 - ports} or lower, or --port 0 (any free ports)."
        )
    if replicas > 1 or route:
        _serve_replicas(config, host, port)
        return

    def announce(bound: int, sim_app: SimApp) -> None:
        dep = sim_app.sim.config
        err_console.print(
            f"{describe(config, sim_app.sim)}: {dep.replicas} replica(s) of TP"
            f"{dep.deployment.tp} {dep.deployment.precision.upper()}, model "
            f"{config.name!r}, on http://{host}:{bound}/v1 (time scale "
            f"{time_scale:g}; simulated, not a measurement)",
            markup=False,
        )

    serve(config, host=host, port=port, announce=announce)


def _serve_replicas(config: SimConfig, host: str, port: int) -> None:
    from infermeter.servers.sim import describe
    from infermeter.servers.sim_fleet import serve_fleet

    def announce(ports: list[int], apps: list[SimApp]) -> None:
        err_console.print(
            f"{len(ports)} replicas of {describe(config, apps[0].sim)}, model "
            f"{config.name!r} (simulated, not a measurement):",
            markup=False,
        )
        if config.route:
            front, *ports = ports
            err_console.print(
                f"  router ({config.route}): http://{host}:{front}/v1", markup=False
            )
        for i, bound in enumerate(ports):
            err_console.print(f"  replica {i}: http://{host}:{bound}/v1", markup=False)

    serve_fleet(config, host=host, port=port, announce=announce)
