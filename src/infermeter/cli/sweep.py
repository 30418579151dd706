"""``infermeter sweep``: the MLPerf Endpoints curve of an endpoint, or its peak rate."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from infermeter.cli.live_view import LiveBar, LiveView
from infermeter.cli.main import EXIT_ERROR, EXIT_INVALID, app, err_console
from infermeter.cli.options import RayActors, RayAddress, positive_seconds
from infermeter.cli.tables import print_table
from infermeter.errors import ConfigError
from infermeter.throughput import SWEEP

EXAMPLES = """
Examples (each point runs --duration, 10 s by default):

  infermeter sweep --url http://127.0.0.1:8000/v1 --model m --concurrency 1,4,16,64
                   # 40 s (tests: --duration 1)

  infermeter sweep --url URL --model m --rates 5,10,20 --pattern gamma --burstiness 0.5
                   # 30 s (tests: --duration 1)

  infermeter sweep --url URL --model m --rates 2000,4000 --workers 2
                   # 20 s (tests: --duration 0.25 --output-tokens 16)

  infermeter sweep --url URL --model m --rates 2000,4000 --ray auto --ray-actors 8
                   # (needs: a Ray cluster started with ray start --head)

  infermeter sweep --url URL --model m --search --ttft-ms 2000 --tpot-ms 200 --duration 30
                   # some minutes: 30 s a point (tests: --duration 0.5 --ttft-ms 200)

  infermeter sweep --url URL --model m --replay --trace mooncake.jsonl --speed 2

  infermeter sweep --url URL1 --url URL2 --routing prefix --model m --rates 5,10
                   # 20 s (tests: --duration 2)
"""


def _split(text: str | None, flag: str = "") -> list[float]:
    """A comma list of numbers; a bad entry is a one-line usage error."""
    try:
        out = [float(v) for v in text.split(",") if v.strip()] if text else []
    except ValueError:
        out = [math.nan]
    if not all(math.isfinite(v) for v in out):
        raise ConfigError(f"{flag} {text!r} is not a list of numbers, e.g. 1,4,16")
    return out


def _whole(values: list[float], flag: str) -> list[int]:
    """Whole numbers (a concurrency of 2.5 was cut to 2 without a word)."""
    if any(v != int(v) for v in values):
        raise ConfigError(f"{flag} takes whole numbers, e.g. 1,4,16 (got {values}).")
    return [int(v) for v in values]


@app.command("sweep", epilog=EXAMPLES)
def sweep_command(
    url: Annotated[
        list[str],
        typer.Option(
            help="Endpoint base URL, e.g. http://h:8000/v1; repeat it, one per replica."
        ),
    ],
    model: Annotated[str, typer.Option(help="Model name sent to the endpoint.")],
    routing: Annotated[
        str,
        typer.Option(help="Fleet routing: round-robin, least-outstanding, prefix."),
    ] = "round-robin",
    api: Annotated[str, typer.Option(help="completions or chat.")] = "completions",
    api_key_env: Annotated[
        str | None, typer.Option(help="Env var with the key.")
    ] = None,
    concurrency: Annotated[
        str | None, typer.Option(help="Levels, e.g. 1,4,16.")
    ] = None,
    rates: Annotated[str | None, typer.Option(help="Rates/s, e.g. 5,10,20.")] = None,
    search: Annotated[
        bool, typer.Option(help="Find the peak rate under limits.")
    ] = False,
    ttft_ms: Annotated[float | None, typer.Option(help="TTFT limit (ms).")] = None,
    tpot_ms: Annotated[float | None, typer.Option(help="TPOT limit (ms).")] = None,
    percentile: Annotated[float, typer.Option(help="Percentile of limits.")] = 90.0,
    start_rate: Annotated[float, typer.Option(help="First search rate.")] = 1.0,
    replay: Annotated[bool, typer.Option(help="Replay --trace's timestamps.")] = False,
    speed: Annotated[float, typer.Option(help="Replay speed-up factor.")] = 1.0,
    pattern: Annotated[str, typer.Option(help="constant, poisson, gamma.")] = "poisson",
    burstiness: Annotated[float, typer.Option(help="Gamma shape.")] = 1.0,
    requests: Annotated[int, typer.Option(min=0, help="Requests per point.")] = 0,
    duration: Annotated[float, typer.Option(help="Seconds per point.")] = 10.0,
    warmup: Annotated[int, typer.Option(min=0, help="Warm-up requests per point.")] = 0,
    input_tokens: Annotated[
        int,
        typer.Option(
            min=1,
            help="Prompt length: tokens of --sut-opt tokenizer=DIR_OR_NAME when "
            "given, else words (one token each on infermeter's mock).",
        ),
    ] = 128,
    output_tokens: Annotated[
        int, typer.Option(min=1, help="max_tokens per request.")
    ] = 128,
    prompts: Annotated[
        str,
        typer.Option(
            help="Prompt shape: random, shared-prefix:GROUPS:TOKENS, multi-turn:TURNS."
        ),
    ] = "random",
    trace: Annotated[Path | None, typer.Option(help="JSONL trace for prompts.")] = None,
    sut_opt: Annotated[list[str], typer.Option("--sut-opt", help="key=value.")] = [],  # noqa: B006
    workers: Annotated[
        int | None, typer.Option(help="HTTP client processes (even shares).")
    ] = None,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of arrivals and prompts.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option(help="Folder for the results [default: runs/sweep-<time>]."),
    ] = None,
    force: Annotated[
        bool, typer.Option(help="Replace a sweep already in --out (its points too).")
    ] = False,
    metrics_url: Annotated[
        list[str],
        typer.Option(help="Prometheus /metrics to scrape per point ('off': none)."),
    ] = [],  # noqa: B006 - typer needs a literal default
    metrics_interval: Annotated[
        str, typer.Option(help="How often to scrape server metrics.")
    ] = "1s",
    completion_timeout: Annotated[
        str,
        typer.Option(
            help="Stop waiting for a point's requests when none has ended this "
            "long; those left are counted unanswered."
        ),
    ] = "120s",
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    preflight: Annotated[
        bool,
        typer.Option(help="Check the endpoint (reachable, model) before the load."),
    ] = True,
) -> None:
    """Run load points over concurrency levels or rates; print the curve and Pareto set.

    Each point reports system tokens/s, tokens/s per user (1000 / TPOT p90 ms),
    TTFT p90 and concurrency, and writes result_summary.json (MLPerf Endpoints
    layout) under --out. infermeter results (unverified). Exit code 1 when no
    request of any point completed, 3 when some point completed none or left
    requests unanswered, else 0.
    """
    from infermeter.cli.options import (
        client_scale,
        metrics_interval_s,
        metrics_urls,
        parse_key_values,
    )
    from infermeter.runs.endpoint_sweep import (
        SweepRequest,
        default_sweep_dir,
        execute_sweep,
    )
    from infermeter.runs.load import LoadSpec
    from infermeter.runs.sweep import Limits

    options = parse_key_values(sut_opt, flag="--sut-opt")
    options.update(
        client_scale(sut="openai", workers=workers, ray=ray, ray_actors=ray_actors)
    )
    options.update(url=",".join(url), model=model, api=api, routing=routing)
    if api_key_env:
        options["api_key_env"] = api_key_env
    base = LoadSpec(
        pattern=pattern,
        burstiness=burstiness,
        requests=requests,
        duration_s=0.0 if requests else duration,
        warmup_requests=warmup,
        seed=seed,
        # 0 would count every request unanswered.
        completion_timeout_s=positive_seconds(
            completion_timeout, flag="--completion-timeout", example="30s"
        ),
    )
    request = SweepRequest(
        sut_options=options,
        concurrency=_whole(_split(concurrency, "--concurrency"), "--concurrency"),
        rates=_split(rates, "--rates"),
        search=search,
        replay=replay,
        replay_speed=speed,
        start_rate=start_rate,
        base=base,
        limits=Limits(ttft_ms=ttft_ms, tpot_ms=tpot_ms, percentile=percentile),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        prompts=prompts,
        trace=trace,
        out_dir=out or default_sweep_dir(),
        metrics_urls=metrics_urls(metrics_url),
        metrics_interval_s=metrics_interval_s(metrics_interval),
        preflight=preflight,
        force=force,
    )
    view = LiveView()
    live = _live_line(view)
    result = execute_sweep(
        request, on_note=_note, live=live, watcher=view if live else None
    )
    for note in request.notes:
        err_console.print(f"info: {note}", markup=False)
    rows = result.table()
    if json_output:
        typer.echo(
            json.dumps({"peak_rate": result.peak_rate, "points": rows}, indent=2)
        )
    else:
        limits = request.limits
        _render(rows, result.peak_rate, limited=bool(limits.ttft_ms or limits.tpot_ms))
    _note(f"Sweep folder: {request.out_dir} (infermeter report {request.out_dir})")
    code = _exit_code(rows)
    if code:
        raise typer.Exit(code)


def _live_line(view: LiveView) -> Any:
    """On a terminal, a line that shows the running point and its time, and
    under it the point's figures so far (``view``: rate, p99 TTFT and TPOT,
    failures); off a terminal (a log) None: a line as each point starts does
    instead."""
    out = Console(stderr=True, highlight=False)
    if not out.is_terminal:
        return None

    @contextlib.contextmanager
    def line(text: str, expected_s: float | None) -> Iterator[None]:
        of = f"of ~{expected_s:g} s" if expected_s else "until its requests are done"
        bar = LiveBar(
            SpinnerColumn(),
            TextColumn(f"{text}: running"),
            TimeElapsedColumn(),
            TextColumn(of),
            console=out,
            transient=True,
        )
        view.clear()  # not the last point's figures while this one warms up
        bar.line_source = view.line
        with bar:
            bar.add_task(text, total=None)
            yield

    return line


def _note(line: str) -> None:
    out = Console(stderr=True, highlight=False)
    # One line per note in a log; wrapped at words on a terminal.
    out.print(line, markup=False, soft_wrap=not out.is_terminal)


def _exit_code(rows: list[dict[str, Any]]) -> int:
    """1: nothing completed anywhere; 3: some point completed nothing, or
    left requests unanswered (its window was cut short)."""
    empty = [row for row in rows if not row.get("completed")]
    for row in empty:
        _note(f"point {row['point']}: no request completed; see the reasons above")
    if empty and len(empty) == len(rows):
        return EXIT_ERROR
    if empty or any(row.get("unanswered") for row in rows):
        return EXIT_INVALID
    return 0


def _render(
    rows: list[dict[str, Any]], peak: float | None, *, limited: bool = False
) -> None:
    table = Table(title="Endpoint curve (infermeter results, unverified)")
    # The load's own column only (a concurrency sweep has no target rate), and
    # "meets limits" only where --ttft-ms or --tpot-ms set some: 80 columns.
    keys = [
        k
        for k in HEADERS
        if (
            k not in ("concurrency", "target_rate")
            or any(row.get(k) not in (None, 0, 0.0) for row in rows)
        )
        and (k != "meets_limits" or limited)
    ]
    for key in keys:
        table.add_column(HEADERS[key], justify="right")
    for row in rows:
        table.add_row(*(_cell(row, k) for k in keys))
    console = Console(highlight=False)
    print_table(console, table)
    console.print(f"tokens/s: {SWEEP}", markup=False, highlight=False)
    for row in rows:
        for line in _point_notes(row):
            console.print(line, markup=False, highlight=False)
    if peak is not None:
        console.print(f"peak rate meeting the limits: {peak:.3g} requests/s")


def _point_notes(row: dict[str, Any]) -> list[str]:
    """What went wrong at a point: its failures by reason, requests unanswered."""
    notes = []
    reasons = row.get("failure_reasons") or {}
    if reasons:
        notes.append(
            f"point {row['point']}: {row['failed']} of {row['issued']} requests "
            "failed: " + "; ".join(f"{n} x {r}" for r, n in reasons.items())
        )
    if row.get("unanswered"):
        notes.append(
            f"point {row['point']}: {row['unanswered']} of {row['issued']} requests "
            "unanswered within the completion timeout: its figures cover a window "
            "cut short (not marked Pareto, never within the limits)"
        )
    return notes


NOT_MEASURED = ("tps_per_user", "ttft_p90_ms", "tpot_p90_ms")
# Headers that wrap at their spaces (80 columns); --json keeps the keys.
HEADERS = {
    "concurrency": "users",
    "target_rate": "rate /s",
    "system_tps": "tokens/s",
    "tps_per_user": "tokens/s per user",
    "ttft_p90_ms": "TTFT p90 ms",
    "tpot_p90_ms": "TPOT p90 ms",
    "failed": "failed",
    "pareto": "Pareto",
    "meets_limits": "meets limits",
    "client_bound": "client bound",
}


def _cell(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    if value is None:
        return "n/a" if key in NOT_MEASURED else ""
    if key == "concurrency" and isinstance(value, float) and value.is_integer():
        return str(int(value))  # users, not a measurement: "4", not "4.0"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _figure(value)
    return str(value)


def _figure(value: float) -> str:
    """Four significant figures at most (--json keeps them all): a fast server's
    16654.731 tokens/s per user would push the table past 80 columns."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.3g}" if abs(value) >= 1 else f"{value:.3f}"
