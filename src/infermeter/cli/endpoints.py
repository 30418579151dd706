"""``infermeter endpoints``: plan, run, package and check an MLPerf Endpoints v1.0 curve.

Everything here makes infermeter results (unverified); only the official reference
client's runs, checked by the official ``submission-checker``, can be submitted.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from infermeter.cli.main import app
from infermeter.cli.tables import print_table
from infermeter.errors import ConfigError

endpoints_app = typer.Typer(
    no_args_is_help=True,
    help="MLPerf Endpoints v1.0: plan the curve's points, run them by the rules, "
    "package the submission tree and run the official checker on it.\n\n"
    "Examples:\n\n"
    "  infermeter endpoints plan --c-max 1000\n\n"
    "  infermeter endpoints plan --c-max 1000 --concurrency 1,8,32,64,128,512,1000",
)
app.add_typer(endpoints_app, name="endpoints")
console = Console(highlight=False)


def parse_levels(text: str | None, flag: str = "--concurrency") -> list[int]:
    """A comma list of whole concurrency levels; a bad entry is a usage error."""
    if not text:
        return []
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(
            f"{flag} {text!r} is not a list of whole numbers, e.g. 1,8,32,64"
        ) from None


@endpoints_app.command("plan")
def plan_command(
    c_max: Annotated[
        int,
        typer.Option(help="Maximum supported concurrency C_max (system_desc.json)."),
    ],
    c_min: Annotated[int, typer.Option(help="The lowest point, C_min (1..32).")] = 1,
    points: Annotated[int, typer.Option(help="How many levels (7..32).")] = 7,
    concurrency: Annotated[
        str | None,
        typer.Option(help="Check this list instead of choosing one, e.g. 1,8,64,1000."),
    ] = None,
    warmup_s: Annotated[
        float, typer.Option(help="Warmup seconds per point (excluded from figures).")
    ] = 60.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    model: Annotated[
        str | None,
        typer.Option(help="Predict each point: benchmark model, e.g. llama2-70b."),
    ] = None,
    accelerator: Annotated[
        str | None, typer.Option(help="Predict: accelerator, e.g. h200.")
    ] = None,
    count: Annotated[int, typer.Option(min=1, help="Predict: accelerators.")] = 8,
    dataset_size: Annotated[
        int | None,
        typer.Option(
            min=1, help="Prompts a pass (default: the benchmark's, with --model)."
        ),
    ] = None,
) -> None:
    """The four regions of interest (§5.5), legal levels (§5.3: 7..32 points, one Ultra
    Low, one in each of Low, Medium and High), each point's minimum steady-state window
    (§6.2) and whole dataset passes, and the campaign's wall time; with --model and
    --accelerator, each point's figures predicted by the performance model (derived).

    Examples:

      infermeter endpoints plan --c-max 1000

      infermeter endpoints plan --c-max 4096 --points 12

      infermeter endpoints plan --c-max 1000 --concurrency 1,8,32,64,128,512,1000

      infermeter endpoints plan --c-max 2048 --model llama2-70b --accelerator h200 --count 8
    """
    from infermeter.runs.endpoints_plan import plan_curve, region_label

    if warmup_s < 0:
        raise ConfigError(f"--warmup-s must be >= 0 (got {warmup_s:g}).")
    if (model is None) != (accelerator is None):
        raise ConfigError(
            "Predicting needs both --model and --accelerator (and --count)."
        )
    plan = plan_curve(
        c_max,
        c_min=c_min,
        count=points,
        points=parse_levels(concurrency),
        warmup_s=warmup_s,
    )
    predicted: dict[int, Any] = {}
    if model is not None and accelerator is not None:
        from infermeter.runs.endpoints_predict import predict_curve

        levels = [p.concurrency for p in plan.points]
        predicted, wl = predict_curve(levels, model, accelerator, count)
        plan = plan_curve(
            c_max,
            points=levels,
            warmup_s=warmup_s,
            dataset_size=dataset_size or wl.samples,
            qps={c: p.qps for c, p in predicted.items()},
        )
    if as_json:
        doc = plan.to_dict()
        if predicted:
            rows = [dataclasses.asdict(p) for p in predicted.values()]
            doc["predicted"] = {"label": _DERIVED, "points": rows}
        console.print_json(json.dumps(doc))
        return
    regions = Table(
        title=f"Regions (§5.5) for C_max {c_max}, C_min {plan.regions.c_min}"
    )
    for col in ("region", "concurrency"):
        regions.add_column(col)
    for name, bounds in plan.regions.items():
        regions.add_row(region_label(name), str(bounds))
    print_table(console, regions)
    _points_table(plan.points, predicted)
    bound = "at least " if plan.total_is_lower_bound else ""
    console.print(
        f"{len(plan.points)} points; campaign wall time {bound}{_hours(plan.total_s)} "
        f"(windows + {warmup_s:g} s warmup each; a window spans whole dataset passes, "
        "so a slow endpoint or a large dataset runs longer)."
    )


_DERIVED = "derived (performance model: step-model means, not p90s)"


def _points_table(points: list[Any], predicted: dict[int, Any]) -> None:
    from infermeter.runs.endpoints_plan import region_label
    from infermeter.runs.endpoints_rules import MIN_TREND_PASSES

    table = Table(title="Points (infermeter plan; MLPerf Endpoints v1.0 rules)")
    cols = ["concurrency", "region", "min window s", "passes", "window s", "accuracy"]
    if predicted:
        cols += ["system tok/s (derived)", "tok/s/user (derived)", "TTFT ms (derived)"]
    for col in cols:
        table.add_column(col, justify="right")
    for p in points:
        row = [str(p.concurrency), region_label(p.region), str(p.min_window_s)]
        passes = str(p.min_passes)
        if p.window_s is not None and p.min_passes < MIN_TREND_PASSES:
            passes += " (not windowable)"  # §4.4 needs 4 passes for the official basis
        row += [passes, "-" if p.window_s is None else f"{p.window_s:,.0f}"]
        row.append("pass (§5.3)" if p.accuracy else "")
        if p.concurrency in predicted:
            f = predicted[p.concurrency]
            row += [
                f"{f.system_tps:,.0f}",
                f"{f.tps_per_user:,.1f}",
                f"{f.ttft_ms:,.0f}",
            ]
        table.add_row(*row)
    print_table(console, table)
    if predicted:
        console.print(f"predicted figures: {_DERIVED}", markup=False)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h ({seconds:,.0f} s)"


@endpoints_app.command("run")
def run_command(
    out: Annotated[Path, typer.Option(help="Folder for the points.")],
    url: Annotated[
        list[str], typer.Option(help="Endpoint base URL, e.g. http://h:8000/v1.")
    ] = [],  # noqa: B006 - typer needs a literal default
    model: Annotated[
        str | None, typer.Option(help="Model name sent to the endpoint.")
    ] = None,
    concurrency: Annotated[
        str | None,
        typer.Option(help="The curve's levels (checked by §5.3), e.g. 1,4,16,64."),
    ] = None,
    config: Annotated[
        list[Path],
        typer.Option(
            help="A reference-client YAML (one point each), instead of the above."
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    c_max: Annotated[
        int | None, typer.Option(help="C_max (default: the highest level).")
    ] = None,
    seed_set: Annotated[
        str | None, typer.Option(help="Published seed set to bind to (§4.6), e.g. A.")
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option(
            help="Shorten every window to this many seconds (not submittable)."
        ),
    ] = None,
    dataset_size: Annotated[
        int, typer.Option(help="Prompts in one dataset pass.")
    ] = 1024,
    warmup: Annotated[
        int | None, typer.Option(help="Warmup requests per point (default 2 x level).")
    ] = None,
    min_passes: Annotated[
        int, typer.Option(min=1, help="Least passes (4: a windowable steady state).")
    ] = 1,
    input_tokens: Annotated[int, typer.Option(min=1, help="Prompt words.")] = 128,
    output_tokens: Annotated[int, typer.Option(min=1, help="max_tokens.")] = 128,
    api: Annotated[str, typer.Option(help="completions or chat.")] = "completions",
    sut_opt: Annotated[list[str], typer.Option("--sut-opt", help="key=value.")] = [],  # noqa: B006
    seed: Annotated[int, typer.Option(min=0, help="Seed when unbound.")] = 0,
    partial: Annotated[
        bool,
        typer.Option(help="Run levels that are not a whole curve (no §5.3 check)."),
    ] = False,
    engine: Annotated[
        str,
        typer.Option(help="infermeter, or endpoints-reference (the reference client)."),
    ] = "infermeter",
    client_python: Annotated[
        Path | None,
        typer.Option(help="endpoints-reference: the Python of the client's venv."),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="endpoints-reference: tokenizer (HF id or folder) for its metrics."
        ),
    ] = None,
    accuracy_file: Annotated[
        Path | None,
        typer.Option(
            "--accuracy-file",
            "--accuracy",
            help="Accuracy set (JSONL: prompt, reference): run §5.3's N accuracy "
            "passes, each row once.",
        ),
    ] = None,
    accuracy_metric: Annotated[
        str, typer.Option(help="rouge (summaries) or exact_match.")
    ] = "rouge",
    accuracy_at: Annotated[
        str | None,
        typer.Option(help="Levels for accuracy passes (default: §5.3's N points)."),
    ] = None,
) -> None:
    """Run the curve's points by the MLPerf Endpoints v1.0 rules: fixed concurrency,
    a warmup run excluded and declared, whole dataset passes drawn with replacement
    (covering §6.2's 600 s / 1,200 s window; 4 for a windowable steady state), seeds
    from a published set, the steady state judged as the checker judges it; its
    figures are infermeter results (unverified). With --config (repeatable), each point is one
    of the reference client's YAML configs (concurrency load pattern), run on
    infermeter's engine: endpoint, model, level, seeds, window, max_new_tokens and the
    JSONL dataset's "prompt" rows come from the files. With --accuracy-file, the
    lowest level, the lowest in Low and Medium, and C_max (§5.3's N points) also
    run an accuracy pass right after their performance run: every row once (without
    replacement, §6.5), answers kept, scored (ROUGE, or exact_match) into
    NN_cK/accuracy/accuracy_results.json. With --engine endpoints-reference those
    levels run the reference client's own YAML (written as NN_cK.yaml: a dataset of
    type accuracy) and it scores them there itself; its rouge scorer needs
    downloads, and is refused naming why where they cannot be made.

    Examples:

      infermeter endpoints run --url http://127.0.0.1:8000/v1 --model m \\
          --concurrency 1,2,4,8,16,32,40 --seed-set A --out curve/
                        # 2.5 h or more: the rules' windows (tests: --duration 0.2 --dataset-size 8)

      infermeter endpoints run --url URL --model m --concurrency 1,2,4,8,16,32,40 \\
          --seed-set A --duration 1 --dataset-size 16 --out curve/
                        # about 15 s; labelled not submittable (tests: --duration 0.2)

      infermeter endpoints run --url URL --model m --concurrency 1,2,4,8,16,32,40 \\
          --seed-set A --duration 1 --dataset-size 16 \\
          --accuracy-file cnn_eval.jsonl --out curve/
                        # the same, with accuracy passes at c=1, 2, 8 and 40 (tests: --duration 0.2)
    """
    from infermeter.cli.options import parse_key_values
    from infermeter.runs.endpoints_run import (
        EndpointsRunRequest,
        PointOutcome,
        run_points,
    )

    options = parse_key_values(sut_opt, flag="--sut-opt")
    request = EndpointsRunRequest(
        sut_options=options,
        concurrency=parse_levels(concurrency),
        out_dir=out,
        c_max=c_max,
        dataset_size=dataset_size,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        seed_set=seed_set,
        seed=seed,
        duration_s=duration,
        warmup_requests=warmup,
        min_passes=min_passes,
        partial=partial,
        accuracy_file=accuracy_file,
        accuracy_metric=accuracy_metric,
        accuracy_at=parse_levels(accuracy_at, "--accuracy-at") if accuracy_at else None,
    )
    if config:
        if url or model or concurrency:
            raise ConfigError(
                "Give --config files or --url/--model/--concurrency, not both."
            )
        request = _from_configs(config, request)
    elif not (url and model and concurrency):
        raise ConfigError("Give --url, --model and --concurrency (or --config FILE).")
    else:
        options.update(url=",".join(url), model=model, api=api)

    if engine == "endpoints-reference":
        _run_reference(request, client_python, tokenizer)
        return
    if engine != "infermeter":
        raise ConfigError(f"--engine {engine!r}: infermeter or endpoints-reference.")

    def show(o: PointOutcome) -> None:
        m = o.result.metrics
        verdict = "meets the rules" if o.meets_rules else "; ".join(o.problems)
        console.print(
            f"c={o.concurrency}: {m.system_tps:,.1f} tok/s, {m.tps_per_user or 0:,.1f} "
            f"tok/s/user, TTFT p90 {m.ttft_p90_ms or 0:.1f} ms; {o.passes} passes, "
            f"window {o.steady['window']['duration_s']:.1f} s: {verdict}",
            markup=False,
        )
        if o.accuracy is not None:
            a = o.accuracy
            scores = ", ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v:,}"
                for k, v in a.scores.items()
            )
            console.print(
                f"  accuracy pass: {a.answered} of {len(a.answers)} samples answered, "
                f"each issued once; {scores}",
                markup=False,
            )

    outcomes = run_points(request, on_point=show)
    code = _run_exit_code(outcomes)
    console.print(
        f"{sum(o.meets_rules for o in outcomes)} of {len(outcomes)} points meet the rules; "
        f"written to {out} (infermeter results, unverified). Next: "
        f"infermeter endpoints package {out} --out DIR",
        markup=False,
    )
    if code:
        raise typer.Exit(code)


def _run_exit_code(outcomes: list[Any]) -> int:
    """1 when no request completed anywhere, 3 when some request (or accuracy
    sample) failed, else 0."""
    from infermeter.cli.main import EXIT_ERROR, EXIT_INVALID

    metrics = [o.result.metrics for o in outcomes]
    if not any(m.completed for m in metrics):
        return EXIT_ERROR
    short = [o.accuracy for o in outcomes if o.accuracy and o.accuracy.problems()]
    failed = any(m.completed < m.issued for m in metrics) or short
    return EXIT_INVALID if failed else 0


def _run_reference(
    request: Any, client_python: Path | None, tokenizer: str | None
) -> None:
    from infermeter.runs.endpoints_reference import run_reference_points

    if client_python is None:
        raise ConfigError("--engine endpoints-reference needs --client-python PATH.")
    for folder in run_reference_points(request, client_python, tokenizer):
        console.print(f"reference client: {folder}", markup=False)
        scores = folder / "accuracy" / "accuracy_results.json"
        if scores.is_file():
            for entry in json.loads(scores.read_text()).get("accuracy_scores", []):
                console.print(
                    f"  its accuracy phase: {entry.get('dataset_name')} "
                    f"score {entry.get('score')} over {entry.get('total_samples')} "
                    "samples",
                    markup=False,
                )
    console.print(
        f"written to {request.out_dir} (the reference client's run folders). Next: "
        f"infermeter endpoints curve {request.out_dir}",
        markup=False,
    )


def _from_configs(paths: list[Path], request: Any) -> Any:
    """The run the reference client's config files describe, on infermeter's engine."""
    from infermeter.runs.endpoints_config import JsonlPrompts, curve_of, read_config

    configs = [read_config(p) for p in paths]
    first = curve_of(configs)
    shortest = min(c.min_duration_ms for c in configs) / 1000
    size = first.samples or (
        len(JsonlPrompts(first.dataset, 1)) if first.dataset else 0
    )
    return dataclasses.replace(
        request,
        sut_options={
            **request.sut_options,
            "url": first.url,
            "model": first.model,
            "api": "chat",  # the reference client's openai API type sends chat
        },
        concurrency=[c.concurrency for c in configs],
        seed_set=first.seed_set,
        seed=first.seed,
        # the rules' windows unless the configs ask for less (then labelled shortened)
        duration_s=shortest if shortest < 600 else request.duration_s,
        output_tokens=first.max_new_tokens or request.output_tokens,
        prompts_file=first.dataset,
        dataset_size=size or request.dataset_size,
        **_config_accuracy(configs, request),
    )


def _config_accuracy(configs: list[Any], request: Any) -> dict[str, Any]:
    """The configs' ROUGE accuracy dataset (the first file's that has one), unless
    --accuracy-file names one; its passes run at §5.3's N points."""
    found = next((c for c in configs if c.accuracy_file is not None), None)
    if request.accuracy_file is not None or found is None:
        return {}
    return {
        "accuracy_file": found.accuracy_file,
        "accuracy_metric": "rouge",
        "accuracy_reference": found.accuracy_reference,
        "accuracy_name": found.accuracy_name,
    }


@endpoints_app.command("package")
def package_command(
    points: Annotated[
        list[Path],
        typer.Argument(help="Folders of 'endpoints run' or 'sweep --concurrency'."),
    ],
    out: Annotated[Path, typer.Option(help="Where <org>/<submission_id>/ is written.")],
    org: Annotated[
        str, typer.Option(help="Submitting organisation (folder).")
    ] = "my_org",
    submission_id: Annotated[
        str, typer.Option(help="Submission folder.")
    ] = "submission_1",
    system: Annotated[str, typer.Option(help="System name (folder).")] = "my_system",
    model_name: Annotated[
        str, typer.Option(help="Benchmark model, canonical form, e.g. llama3_1-8b.")
    ] = "my_model",
    dataset: Annotated[str, typer.Option(help="Dataset name.")] = "my_dataset",
    division: Annotated[
        str, typer.Option(help="Standardized, Serviced or RDI (§2).")
    ] = "RDI",
    c_max: Annotated[
        int | None, typer.Option(help="C_max (default: the highest point).")
    ] = None,
    seed_set: Annotated[
        str | None, typer.Option(help="The seed set the points were run with.")
    ] = None,
    endpoint_url: Annotated[str | None, typer.Option(help="Endpoint URL.")] = None,
) -> None:
    """Assemble the §8.1 submission tree from stored points: per point point.yaml,
    config.yaml, result_summary.json and system_desc.json. Fields only the submitter
    knows are strings starting FILL_IN (grep -rn FILL_IN). Standardized needs a
    system_power.json per system (§4.5.2), which is not written.

    Examples:

      infermeter endpoints package curve/ --out packaged/ --model-name llama3_1-8b

      infermeter endpoints package curve/ --out packaged/ --seed-set A \\
          --model-name llama3_1-8b --system my_system   # points run with --seed-set A
                        # a sweep's points are unbound: exit 2
    """
    from infermeter.runs.endpoints_package import PackageRequest, package

    root = package(
        PackageRequest(
            sources=points,
            out=out,
            org=org,
            submission_id=submission_id,
            system=system,
            model_name=model_name,
            dataset=dataset,
            division=division,
            c_max=c_max,
            seed_set=seed_set,
            endpoint_url=endpoint_url,
        )
    )
    console.print(
        f"wrote {root}; fill in the FILL_IN fields (grep -rn FILL_IN {root}), then "
        f"infermeter endpoints check {root.parent}",
        markup=False,
    )


@endpoints_app.command("check")
def check_command(
    path: Annotated[
        Path, typer.Argument(help="The organisation's folder of the tree.")
    ],
    checker: Annotated[
        str | None,
        typer.Option(
            help="The checker's command (default: $INFERMETER_ENDPOINTS_CHECKER, else "
            "endpoints-submission-cli on PATH).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the findings as JSON.")
    ] = False,
) -> None:
    """Run the official MLPerf Endpoints submission checker (PyPI endpoints-submission-cli,
    Python >= 3.12, installed on its own) on a tree and print its errors and warnings.
    Exit 0 when it finds no error, 3 when it does.

    Examples:

      pip install 'infermeter[endpoints]'   (or a venv of its own, then --checker PATH)

      infermeter endpoints check submission/my_org   # no accuracy runs: exit 3
    """
    from infermeter.cli.main import EXIT_INVALID
    from infermeter.runs.endpoints_check import run_checker

    report = run_checker(path, checker)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        table = Table(title=f"submission-checker on {path}")
        for col in ("severity", "rule", "message"):
            table.add_column(col)
        for f in report.findings:
            if f.severity != "info":
                table.add_row(f.severity, f.rule, f.message)
        print_table(console, table)
        console.print(report.summary(), markup=False)
    if report.errors:
        raise typer.Exit(EXIT_INVALID)


@endpoints_app.command("curve")
def curve_command(
    folders: Annotated[
        list[Path],
        typer.Argument(
            help="Curves: 'endpoints run' / 'sweep' folders or results/<sys>/<model>."
        ),
    ],
    label: Annotated[
        list[str],
        typer.Option(help="A label per curve, in order (default: folder names)."),
    ] = [],  # noqa: B006 - typer needs a literal default
    out: Annotated[
        Path | None, typer.Option(help="Write the chart as an HTML page.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the table as JSON.")
    ] = False,
) -> None:
    """Curves as MLPerf Endpoints publishes them: the step function of system tokens/s
    against tokens/s per user, regions of interest shaded, TTFT p90 per point, two or
    more curves overlaid; per region, each curve's height (most tokens/s) and area
    (under the step function) against the first curve's.

    Examples:

      infermeter endpoints curve curve/ --out curve.html

      infermeter endpoints curve curve/ \\
          submission/my_org/submission_1/results/my_system/llama3_1-8b \\
          --label run --label packaged --out curves.html
    """
    from infermeter.cli.curves import show_curves
    from infermeter.runs.endpoints_curve import load_curve

    if label and len(label) != len(folders):
        raise ConfigError(f"give one --label per folder ({len(folders)}), or none.")
    curves = [load_curve(f, label[i] if label else None) for i, f in enumerate(folders)]
    show_curves(curves, out=out, as_json=as_json)
