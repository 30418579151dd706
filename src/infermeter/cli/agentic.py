"""``infermeter agentic``: multi-turn agentic trajectories (MLPerf Endpoints' Agentic Inference)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from infermeter.cli.main import EXIT_INVALID, app, err_console

agentic_app = typer.Typer(
    no_args_is_help=True,
    help="Agentic traffic: check or make trajectory files, replay them against "
    "an endpoint with sessions, salts and tool delays.\n\n"
    "Examples:\n\n"
    "  infermeter agentic check trajectories.jsonl\n\n"
    "  infermeter agentic synth syn.jsonl --count 64 --benchmark kimi-k3\n\n"
    "  infermeter agentic run --url http://127.0.0.1:8000/v1 --model m "
    "--dataset trajectories.jsonl --concurrency 4 --output-dir runs/agentic",
)
app.add_typer(agentic_app, name="agentic")
out = Console(highlight=False, soft_wrap=True)


@agentic_app.command("check")
def check_command(
    path: Annotated[Path, typer.Argument(help="A flat trajectory JSONL file.")],
) -> None:
    """Check a trajectory file's rows, order and roles; one line names a bad one.

    Examples:

      infermeter agentic check trajectories.jsonl
    """
    from infermeter.workloads.agentic.trajectories import read_trajectories

    found = read_trajectories(path)
    turns = sum(len(t.client_turns()) for t in found)
    tools = sum(r.role == "tool" for t in found for r in t.rows)
    out.print(
        f"{path}: {len(found)} trajectories, {turns} client turns "
        f"({tools} with tool results), "
        f"{sum(len(t.rows) for t in found)} rows",
        markup=False,
    )


@agentic_app.command("synth")
def synth_command(
    path: Annotated[Path, typer.Argument(help="The JSONL file to write.")],
    count: Annotated[int, typer.Option(min=1, help="Trajectories to make.")] = 64,
    seed: Annotated[int, typer.Option(min=0, help="Same seed, same file.")] = 0,
    benchmark: Annotated[
        str | None,
        typer.Option(
            help="Output lengths inside this benchmark's OSL-per-turn window."
        ),
    ] = None,
) -> None:
    """Write synthetic trajectories (coding-agent sessions with a bash tool).

    Examples:

      infermeter agentic synth syn.jsonl --count 64 --seed 1

      infermeter agentic synth syn.jsonl --count 613 --benchmark qwen3.6-35b-a3b
    """
    from infermeter.outfile import replacing
    from infermeter.workloads.agentic.benchmarks import get_agentic
    from infermeter.workloads.agentic.synth import shape_for_osl, synthetic_trajectories
    from infermeter.workloads.agentic.trajectories import write_trajectories

    shape = shape_for_osl(get_agentic(benchmark).osl_per_turn) if benchmark else None
    made = synthetic_trajectories(count, shape, seed=seed)
    with replacing(path) as tmp:
        rows = write_trajectories(tmp, made)
    out.print(f"wrote {path}: {count} trajectories, {rows} rows", markup=False)


@agentic_app.command("run")
def run_command(
    url: Annotated[str, typer.Option(help="The endpoint's base URL (ending in /v1).")],
    model: Annotated[str, typer.Option(help="Model name to request.")],
    output_dir: Annotated[Path, typer.Option(help="A new folder for the results.")],
    dataset: Annotated[
        Path | None, typer.Option(help="A flat trajectory JSONL file.")
    ] = None,
    synthetic: Annotated[
        int, typer.Option(min=0, help="Without --dataset: this many synthetic ones.")
    ] = 0,
    benchmark: Annotated[
        str | None,
        typer.Option(help="kimi-k3 or qwen3.6-35b-a3b: its sampling and gates."),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Users at once.")] = 8,
    num_trajectories: Annotated[
        int | None,
        typer.Option(min=1, help="A whole multiple of the dataset (default: it once)."),
    ] = None,
    seed: Annotated[
        int, typer.Option(min=0, help="Seed of the salts (and synthesis).")
    ] = 0,
    salt: Annotated[bool, typer.Option(help="Salt the system prompt.")] = True,
    tool_delay: Annotated[
        bool, typer.Option(help="Wait each turn's delay_seconds.")
    ] = True,
    turn_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds a turn may take.")
    ] = 86400.0,
    stop_at_first_user: Annotated[
        bool,
        typer.Option(help="Issue nothing after the performance window (not official)."),
    ] = False,
    carry: Annotated[
        str, typer.Option(help="model (its own answers) or dataset (the reference's).")
    ] = "model",
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the API key.")
    ] = None,
    api_key_file: Annotated[
        str | None, typer.Option(help="A file holding the API key.")
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="tokenizer.json, its folder or a tiktoken encoding: counts output "
            "tokens when the server sends no usage."
        ),
    ] = None,
    first_token_timeout: Annotated[
        float,
        typer.Option(min=0.0, help="Seconds to the first token (0: no limit)."),
    ] = 0.0,
) -> None:
    """Replay trajectories against an endpoint; write agentic.json and turns.jsonl.

    Each of --concurrency users replays one trajectory at a time, one turn in
    flight, each turn after its tool delay, carrying the model's own answers;
    every request has X-Session-ID. The performance window ends when the first
    user finishes its last trajectory. Turns go through the HTTP client's
    exchange, as run samples do (its connection pool, timeouts, failure
    reasons, API key, token counts), in this process. With --benchmark the
    run is judged against its inline-accuracy floor and OSL-per-turn window:
    exit 3 when a gate fails. Results are infermeter results (unverified).

    Examples:

      infermeter agentic run --url http://127.0.0.1:8000/v1 --model m \\
        --synthetic 64 --output-dir runs/a  # 8 users (tests: --synthetic 8)

      infermeter agentic run --url http://10.0.0.5:8000/v1 --benchmark kimi-k3 \\
        --model moonshotai/Kimi-K3 --dataset agentic.jsonl --api-key-env KEY \\
        --num-trajectories 1226 --output-dir runs/kimi  # (needs: a Kimi K3 endpoint)
    """
    from infermeter.runs.agentic import AgenticSettings
    from infermeter.runs.agentic_run import AgenticRunSpec, run_agentic

    settings = AgenticSettings(
        concurrency=concurrency,
        num_trajectories=num_trajectories,
        seed=seed,
        enable_salt=salt,
        inject_tool_delay=tool_delay,
        turn_timeout_s=turn_timeout,
        stop_issuing_on_first_user_complete=stop_at_first_user,
        carry=carry,
    )
    spec = AgenticRunSpec(
        url, model, output_dir, settings, dataset, synthetic, benchmark,
        api_key_env=api_key_env, api_key_file=api_key_file, tokenizer=tokenizer,
        first_token_timeout_s=first_token_timeout,
    )  # fmt: skip
    outcome = run_agentic(spec)
    m = outcome.metrics
    out.print(
        f"{m.trajectories_completed} trajectories, {m.turns_completed} turns "
        f"({m.turns_failed} failed); TTFT p90 {_ms(m.ttft_p90_ms)}, TPOT p90 "
        f"{_ms(m.tpot_p90_ms)}, e2e_avg_interactivity "
        f"{_num(m.e2e_avg_interactivity)} tokens/s, OSL per turn "
        f"{_num(m.osl_per_turn_mean)}; infermeter results (unverified)",
        markup=False,
    )
    v = outcome.verdict
    if v is not None:
        out.print(f"accuracy {v.accuracy}, OSL {v.osl}", markup=False)
    if outcome.official_problems:
        err_console.print(
            "not an official run: " + "; ".join(outcome.official_problems), markup=False
        )
    out.print(f"wrote {outcome.folder}", markup=False)
    if v is not None and not v.passed:
        err_console.print("gates failed: " + "; ".join(v.problems), markup=False)
        raise typer.Exit(EXIT_INVALID)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
