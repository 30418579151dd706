"""``infermeter serve-sim``: an OpenAI-compatible endpoint timed by the performance model."""

from __future__ import annotations

from typing import Annotated

import typer

from infermeter.cli.main import app, err_console
from infermeter.servers.sim import SimApp, SimConfig, describe, serve


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
    port: Annotated[int, typer.Option(help="TCP port (0 = any free port).")] = 8000,
    time_scale: Annotated[
        float, typer.Option(help="Simulated seconds per real second.")
    ] = 1.0,
    chunk_ms: Annotated[
        float, typer.Option(help="Coalesce streamed tokens into chunks this often.")
    ] = 50.0,
    served_model: Annotated[
        str | None, typer.Option(help="Model name in responses (default: --model).")
    ] = None,
) -> None:
    """Serve a simulated system's /v1/completions and /v1/chat/completions until Ctrl-C.

    Token timings follow infermeter's calibrated performance model in real time
    (continuous batching, chunked prefill, KV admission, tensor parallelism):
    any OpenAI client can benchmark the simulated system. Input length = the
    prompt's words; output length = max_tokens. The first chunk leaves at the
    simulated first-token time and the last one (with usage) at the simulated
    completion. Figures measured against it are simulated, not measurements.
    GET /stats shows the simulator's counts.

    Examples:

      infermeter serve-sim --accelerator h100-sxm --count 8 --model llama2-70b

      infermeter serve-sim --accelerator h200-sxm --count 8 --precision fp8 --port 0

      infermeter serve-sim --time-scale 2 --chunk-ms 200
    """
    config = SimConfig(
        accelerator=accelerator,
        count=count,
        model=model,
        precision=precision,
        tp=tp,
        time_scale=time_scale,
        chunk_ms=chunk_ms,
        served_model=served_model or "",
    )

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
