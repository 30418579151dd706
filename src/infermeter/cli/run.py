"""``infermeter run``: one benchmark run with a verdict, a run folder and a summary."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infermeter.cli.main import EXIT_INVALID, EXIT_OK, app, err_console

if TYPE_CHECKING:
    from infermeter.loadgen.stop import StopSignal
    from infermeter.runs.run import RunReport

from infermeter.cli.options import (
    RayActors,
    RayAddress,
    client_scale,
    dataset_options,
    metrics_interval_s,
    metrics_urls,
    parse_duration_ms,
    parse_duration_ns,
    parse_key_values,
)

EXAMPLES = r"""
Examples:

  infermeter run                                   # the default: Llama 2 70B Server, short
  infermeter run --sut-opt accelerator=h200        # simulated 8x H200 at its published rate
                 # (tests: --min-duration 5s)
  infermeter run --sut fake --scenario Offline --min-duration 1s --sut-opt tpot_ms=50
  infermeter run --benchmark resnet50 --scenario SingleStream --sut fake \
                 --sut-opt latency_ms=10 --min-duration 1s
                 # the fake answers in the 10 ms SingleStream expects

  Endpoint runs last MLPerf's 10 minutes unless --min-duration says otherwise:

  infermeter run --sut openai --url http://127.0.0.1:8000/v1 --model m --target-qps 4
                 # (tests: --target-qps 50 --min-duration 2s --performance-sample-count 512
                 #  --output-len 16)
  infermeter run --sut openai --url http://127.0.0.1:8000/v1 --model m --workers 2
                 # (tests: --target-qps 50 --min-duration 2s --performance-sample-count 512
                 #  --output-len 16)
  infermeter run --sut openai --url http://127.0.0.1:8000/v1 --model m --ray --ray-actors 2
                 # (tests: --target-qps 25 --min-duration 2s --performance-sample-count 512
                 #  --output-len 16)
  infermeter run --sut openai --model m --url http://h1/v1 --url http://h2/v1 --routing prefix
                 # (tests: --target-qps 50 --min-duration 2s --performance-sample-count 512
                 #  --output-len 16)

  infermeter run --user-conf user.conf --output-dir runs/my-run --json
                 # as long as user.conf says (MLPerf: 10 minutes)
  infermeter run --engine mlcommons --sut fake --scenario Offline --min-duration 1s \
                 --sut-opt tpot_ms=50   # the official LoadGen
  infermeter run --audit TEST04 --sut audit-fake --benchmark resnet50 --scenario Offline \
                 --target-qps 20000 --min-duration 1s --min-query-count 1000 \
                 --sut-opt latency_ms=0.05 --output-dir runs/resnet50-Offline   # MLPerf audit
                 # (tests: --target-qps 1000 --min-duration 2s
                 #  --sut-opt latency_ms=1)
  infermeter run --metrics-url off                 # do not scrape the server's /metrics
                 # (tests: --min-duration 5s)
"""


@app.command("run", epilog=EXAMPLES)
def run_command(
    benchmark: Annotated[
        str, typer.Option(help="Benchmark name (infermeter benchmarks).")
    ] = "llama2-70b",
    scenario: Annotated[
        str, typer.Option(help="SingleStream, MultiStream, Server or Offline.")
    ] = "Server",
    mode: Annotated[
        str,
        typer.Option(
            help="PerformanceOnly, AccuracyOnly, SubmissionRun, FindPeakPerformance."
        ),
    ] = "PerformanceOnly",
    sut: Annotated[
        str,
        typer.Option(
            help="System under test kind: sim (a simulated 8x H100 endpoint), null, "
            "fake, openai, simulated, onnxruntime, torch_llm."
        ),
    ] = "sim",
    sut_opt: Annotated[
        list[str], typer.Option("--sut-opt", help="SUT option key=value (repeatable).")
    ] = [],  # noqa: B006
    url: Annotated[
        list[str],
        typer.Option(
            help="Endpoint base URL (openai SUT); repeat it, one per replica, for a fleet."
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    routing: Annotated[
        str | None,
        typer.Option(
            help="Fleet routing over the --url replicas: round-robin, "
            "least-outstanding or prefix (KV-aware)."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model name sent to the endpoint (openai SUT).")
    ] = None,
    api: Annotated[
        str | None, typer.Option(help="chat or completions (openai SUT).")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the API key.")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="HTTP client processes (openai and sim SUTs); each sends an even "
            "share of the requests. Started before the run's clock."
        ),
    ] = None,
    ray: RayAddress = None,
    ray_actors: RayActors = None,
    user_conf: Annotated[
        Path | None, typer.Option(help="MLPerf user.conf applied after mlperf.conf.")
    ] = None,
    target_qps: Annotated[
        float | None, typer.Option(help="Server target QPS / Offline expected QPS.")
    ] = None,
    min_duration: Annotated[
        str | None, typer.Option(help="Minimum duration, e.g. 500ms, 10s, 10m.")
    ] = None,
    max_duration: Annotated[
        str | None, typer.Option(help="Maximum duration (0 = none).")
    ] = None,
    min_query_count: Annotated[
        int | None, typer.Option(help="Minimum query count.")
    ] = None,
    max_query_count: Annotated[
        int | None, typer.Option(help="Maximum query count.")
    ] = None,
    total_sample_count: Annotated[
        int | None, typer.Option(help="Samples in the dataset (synthetic size).")
    ] = None,
    performance_sample_count: Annotated[
        int | None, typer.Option(help="Samples loaded for performance runs.")
    ] = None,
    completion_timeout: Annotated[
        str | None,
        typer.Option(
            help="End the run INVALID when the SUT makes no progress this long."
        ),
    ] = None,
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset file; synthetic when absent.")
    ] = None,
    dataset_format: Annotated[
        str | None, typer.Option(help="Dataset format (default: sniffed).")
    ] = None,
    allow_pickle: Annotated[
        bool,
        typer.Option(
            help="Trust a pickle --dataset: unpickling runs any code the file holds "
            "(or convert it once: infermeter datasets convert)."
        ),
    ] = False,
    dataset_column: Annotated[
        list[str],
        typer.Option(
            "--dataset-column", help="Column mapping field=column (repeatable)."
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    tokenizer: Annotated[
        Path | None, typer.Option(help="A tokenizer.json to count and decode tokens.")
    ] = None,
    input_len: Annotated[
        str | None,
        typer.Option(
            help="Synthetic prompt lengths in tokens: 128, uniform:64:512, lognormal:200:0.5."
        ),
    ] = None,
    output_len: Annotated[
        str | None, typer.Option(help="Synthetic output lengths (same forms).")
    ] = None,
    prompts: Annotated[
        str | None,
        typer.Option(
            help="Synthetic prompt shape: random, shared-prefix:GROUPS:TOKENS "
            "(shared system prompts) or multi-turn:TURNS (growing conversations)."
        ),
    ] = None,
    dataset_seed: Annotated[
        int, typer.Option(min=0, help="Seed of synthetic data.")
    ] = 0,
    output_dir: Annotated[
        Path | None, typer.Option(help="Write the run folder exactly here.")
    ] = None,
    trace: Annotated[
        bool, typer.Option(help="Also write mlperf_log_trace.json (large).")
    ] = False,
    store: Annotated[
        Path | None, typer.Option(help="Results store (SQLite) path.")
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            help="native, or mlcommons: the official LoadGen (pip install mlcommons-loadgen)."
        ),
    ] = "native",
    metrics_url: Annotated[
        list[str],
        typer.Option(
            help="Prometheus /metrics to scrape during the run (repeatable; 'off': "
            "none). Default: each endpoint's own /metrics, where it answers."
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    metrics_interval: Annotated[
        str, typer.Option(help="How often to scrape server metrics, e.g. 1s, 500ms.")
    ] = "1s",
    json_output: Annotated[
        bool, typer.Option("--json", help="Print run.json instead of the summary.")
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            help="No progress: neither the live bar nor the lines off a terminal.",
        ),
    ] = False,
    preflight: Annotated[
        bool,
        typer.Option(
            help="Check an openai endpoint (reachable, model, stream shape) "
            "before sending load."
        ),
    ] = True,
    audit: Annotated[
        str | None,
        typer.Option(
            help="MLPerf audit test TEST01, TEST04 or TEST06: the reference runs, "
            "the audit run and the verification (see infermeter compliance)."
        ),
    ] = None,
    audit_config: Annotated[
        Path | None,
        typer.Option(help="An audit.config applied last, as LoadGen applies it."),
    ] = None,
    force: Annotated[
        bool, typer.Option(help="Replace a run already in --output-dir.")
    ] = False,
    grace_period: Annotated[
        str,
        typer.Option(
            help="On Ctrl-C / SIGTERM, wait this long for requests in flight "
            "(a second signal stops waiting)."
        ),
    ] = "10s",
) -> None:
    """Run a benchmark under MLPerf rules and print its verdict.

    Writes a run folder with the MLPerf log files, records.npz and run.json,
    and adds it to the results store. Exit code 0 VALID, 3 INVALID or
    accuracy FAIL, 2 usage error, 1 other error; 130 / 143 when Ctrl-C /
    SIGTERM stopped it (the folder then holds every completed sample).
    """
    from infermeter.cli.render import print_run
    from infermeter.loadgen.settings import Mode, Scenario
    from infermeter.loadgen.stop import StopSignal
    from infermeter.runs.interrupt import stop_on_signals
    from infermeter.runs.request import RunRequest
    from infermeter.runs.run import execute

    options = parse_key_values(sut_opt, flag="--sut-opt")
    options.update(
        client_scale(sut=sut, workers=workers, ray=ray, ray_actors=ray_actors)
    )
    for key, value in (
        ("url", ",".join(url) if url else None),
        ("routing", routing),
        ("model", model),
        ("api", api),
        ("api_key_env", api_key_env),
    ):
        if value is not None:
            options[key] = value
    overrides: dict[str, object] = {}
    if min_duration is not None:
        overrides["min_duration_ms"] = parse_duration_ms(
            min_duration, flag="--min-duration"
        )
    if max_duration is not None:
        overrides["max_duration_ms"] = parse_duration_ms(
            max_duration, flag="--max-duration"
        )
    if completion_timeout is not None:
        overrides["completion_timeout_ns"] = parse_duration_ns(
            completion_timeout, flag="--completion-timeout"
        )
    counts = {
        "min_query_count": min_query_count,
        "max_query_count": max_query_count,
        "performance_sample_count_override": performance_sample_count,
    }
    overrides.update({k: v for k, v in counts.items() if v is not None})
    request = RunRequest(
        benchmark=benchmark,
        scenario=Scenario.parse(scenario),
        mode=Mode.parse(mode),
        sut=sut,
        sut_options=options,
        user_conf=user_conf,
        target_qps=target_qps,
        overrides=overrides,
        dataset=dataset,
        dataset_format=dataset_format,
        dataset_options=dataset_options(
            columns=dataset_column,
            tokenizer=tokenizer,
            seed=dataset_seed,
            input_len=input_len,
            output_len=output_len,
            prompts=prompts,
            allow_pickle=allow_pickle,
        ),
        total_sample_count=total_sample_count,
        output_dir=output_dir,
        trace=trace,
        store=store,
        engine=engine,
        metrics_urls=metrics_urls(metrics_url),
        metrics_interval_s=metrics_interval_s(metrics_interval),
        preflight=preflight,
        force=force,
    )
    if audit is not None:
        from infermeter.cli.compliance import run_audit_command

        audited = run_audit_command(
            audit, request, audit_config, json_output=json_output
        )
        raise typer.Exit(EXIT_OK if audited.passed else EXIT_INVALID)
    request.audit_config = audit_config
    stop = StopSignal(grace_ns=parse_duration_ns(grace_period, flag="--grace-period"))
    with stop_on_signals(stop):
        report = print_run(
            request,
            functools.partial(execute, stop=stop),
            json_output=json_output,
            quiet=quiet,
        )
    raise typer.Exit(_exit_code(report, stop))


def _exit_code(report: RunReport, stop: StopSignal) -> int:
    """130 / 143 after a signal (saying where the run is), 3 INVALID or FAIL, else 0."""
    from infermeter.runs.interrupt import exit_code

    interrupted = getattr(report.outcome, "interrupted", None)
    if interrupted:
        done = report.document.get("metrics", {}).get("samples_completed", 0)
        err_console.print(
            f"{interrupted}: the run folder, with {done:,} completed samples, "
            f"is {report.folder}",
            markup=False,
        )
        return exit_code(stop.signal) or EXIT_INVALID
    accuracy = report.document.get("accuracy") or {}
    if report.outcome.valid is False or accuracy.get("passed") is False:
        return EXIT_INVALID
    return EXIT_OK
