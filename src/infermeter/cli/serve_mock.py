"""``infermeter serve-mock``: an OpenAI-compatible mock server for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infermeter.cli.main import app, err_console

Rate = Annotated[float, typer.Option(min=0.0, max=1.0)]


@app.command("serve-mock")
def serve_mock_command(
    mode: Annotated[
        str, typer.Option(help="echo | max-throughput | timed | faults")
    ] = "max-throughput",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="TCP port (0 = any free port).")
    ] = 8000,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    model: Annotated[str, typer.Option(help="Model name to answer as.")] = "mock-model",
    ttft: Annotated[
        str, typer.Option(help="TTFT seconds (timed/faults).")
    ] = "const:0.05",
    itl: Annotated[str, typer.Option(help="Inter-token seconds.")] = "const:0.01",
    output_tokens: Annotated[
        str | None, typer.Option(help="Output length; default: max_tokens.")
    ] = None,
    error_rate: Rate = 0.0,
    reset_rate: Rate = 0.0,
    stall_rate: Rate = 0.0,
    malformed_rate: Rate = 0.0,
    slow_first_byte_rate: Rate = 0.0,
    slow_first_byte_s: Annotated[float, typer.Option(min=0.0)] = 0.5,
    seed: Annotated[int, typer.Option(min=0, help="Seed of timings and faults.")] = 0,
    style: Annotated[
        str,
        typer.Option(
            help="openai, or llama.cpp: no usage in streams, empty-text chunks "
            "for split UTF-8 characters, finish-only last chunk."
        ),
    ] = "openai",
    check_model: Annotated[
        bool, typer.Option(help="Answer 404 to other model names (as vLLM does).")
    ] = False,
    workers: Annotated[
        int, typer.Option(min=1, help="Server processes sharing the port.")
    ] = 1,
    video_sync: Annotated[
        bool,
        typer.Option(
            help="POST /v1/videos answers with the video (vLLM-Omni style), not a job."
        ),
    ] = False,
    reasoning_tokens: Annotated[
        int,
        typer.Option(min=0, help="Chat answers start with this many reasoning deltas."),
    ] = 0,
    reasoning_field: Annotated[
        str,
        typer.Option(
            help="reasoning_content (vLLM, SGLang) or reasoning (newer OpenAI-style)."
        ),
    ] = "reasoning_content",
    tool_calls: Annotated[
        str,
        typer.Option(
            help="never | always | when-tools: answer with a streamed bash tool call."
        ),
    ] = "never",
    server: Annotated[
        str,
        typer.Option(
            help="aiohttp (every mode and route) or lean (max-throughput only, a "
            "fraction of the CPU per answer: for measuring fast clients)."
        ),
    ] = "aiohttp",
    chunked: Annotated[
        bool,
        typer.Option(
            help="--server lean: stream in chunked encoding, one chunk per SSE "
            "event (as vLLM does), not one body with a Content-Length."
        ),
    ] = False,
    request_log: Annotated[
        Path | None,
        typer.Option(
            help="On exit, write each request's server-side times (received, first "
            "and last byte, ns) and tokens sent to this JSON file (as GET /mock/requests)."
        ),
    ] = None,
) -> None:
    """Serve the OpenAI API (text, chat with images, audio, images, videos) until Ctrl-C.

    Routes: /v1/completions and /v1/chat/completions (streamed or not; chat
    messages may carry image_url / input_audio parts), /v1/audio/transcriptions
    (multipart upload, streamed with stream=true), /v1/images/generations,
    /v1/videos (job, status and content). Malformed requests get a 400 with
    the reason; GET /received lists what the latest multimodal requests held.

    Modes: echo (answers the prompt's words), max-throughput (no compute: shows
    what the client can do), timed (TTFT, inter-token gap and output length
    drawn from distributions: const:V, exp:MEAN, uniform:LO,HI, normal:MEAN,STD,
    lognormal:MEAN,STD), faults (timed, plus injected errors). GET /stats
    gives the server's own counts.

    Examples:

      infermeter serve-mock --mode max-throughput --port 8000 --workers 2

      infermeter serve-mock --mode timed --ttft normal:0.2,0.02 --itl const:0.02

      infermeter serve-mock --mode faults --error-rate 0.05 --reset-rate 0.02

      infermeter serve-mock --mode timed --style llama.cpp --port 8001

      infermeter serve-mock --mode timed --port 8002 --video-sync

      infermeter serve-mock --mode timed --reasoning-tokens 20 --tool-calls when-tools

      infermeter serve-mock --mode timed --request-log mock-requests.json

      infermeter serve-mock --mode max-throughput --server lean --request-log log.json

    Agentic answers (--reasoning-tokens, --tool-calls) stream reasoning deltas
    first, then text or one bash tool call; GET /agentic/requests lists each
    request's X-Session-ID and message roles. GET /mock/requests gives the
    server's own time of every completion request (when it came in, when its
    first token chunk and last byte went out) and the tokens it sent.

    --server lean answers max-throughput's completions, chat, /v1/models,
    /health, /stats, /metrics and /mock/requests with the same bytes on a raw
    protocol (httptools, uvloop): the mock stays far from the limit of a fast
    client. --chunked (lean) streams one chunk per SSE event, as vLLM does.
    """
    # The server (aiohttp) loads only when this command runs.
    from infermeter.servers.faults import FaultConfig
    from infermeter.servers.mock import MockConfig, serve
    from infermeter.servers.mock_agentic import AgenticStream

    faults = FaultConfig(
        error_rate=error_rate,
        reset_rate=reset_rate,
        stall_rate=stall_rate,
        malformed_rate=malformed_rate,
        slow_first_byte_rate=slow_first_byte_rate,
        slow_first_byte_s=slow_first_byte_s,
    )
    config = MockConfig(
        mode=mode,
        model=model,
        ttft=ttft,
        itl=itl,
        output_tokens=output_tokens,
        faults=faults,
        seed=seed,
        style=style,
        check_model=check_model,
        video_sync=video_sync,
        agentic=AgenticStream(reasoning_tokens, reasoning_field, tool_calls),
        server=server,
        chunked=chunked,
    )

    shown = mode if style == "openai" else f"{mode}, {style} style"
    shown += ", lean server" if server == "lean" else ""

    def announce(bound: int) -> None:
        err_console.print(
            f"mock server ({shown}) on http://{host}:{bound}/v1, {workers} process(es)",
            markup=False,
        )

    serve(
        config,
        host=host,
        port=port,
        workers=workers,
        announce=announce,
        request_log=request_log,
    )
