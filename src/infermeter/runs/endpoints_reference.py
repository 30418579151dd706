"""The MLPerf Endpoints reference client as an engine (``endpoints run --engine
endpoints-reference``): infermeter writes the dataset, runs ``inference-endpoint
benchmark online`` once per level, and keeps its run folders as they are.

The reference client (mlcommons/endpoints, Python >= 3.12) lives in its own venv;
``--client-python`` names that venv's Python and its ``inference-endpoint`` command
beside it runs. Each level's folder ``<out>/NN_cK/`` is the client's ``--report-dir``
(its ``performance/result_summary.json``, ``config.yaml``, ``events.jsonl``), plus
``infermeter_point.json`` with what infermeter knows (seed set, dataset size,
passes, the command), so ``endpoints package`` and ``endpoints curve`` read it as they
read infermeter's points. The prompts are the same synthetic prompts infermeter's
engine sends, written as JSONL (``prompt`` rows). A level issues ``min_passes`` whole
dataset passes (``--num-samples``); the client counts tokens with ``--tokenizer``
(its metrics need one: a Hugging Face id, or a local folder where the hub cannot be
reached). The client's warmup is its own default (off). With an accuracy set,
§5.3's N levels run from the client's own YAML, its accuracy phase included, and
its scores stay where it writes them (runs/endpoints_reference_accuracy.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError, InfermeterError
from infermeter.outfile import writable_folder
from infermeter.runs.endpoints_accuracy import AccuracySet, read_accuracy_set
from infermeter.runs.endpoints_files import SIDECAR
from infermeter.runs.endpoints_reference_accuracy import (
    accuracy_entry,
    check_client_scorer,
    client_scores,
    point_config,
    write_accuracy_dataset,
    write_point_config,
)
from infermeter.runs.endpoints_rules import SEED_SETS, min_duration_s
from infermeter.runs.endpoints_run import EndpointsRunRequest
from infermeter.suts.prompts import SyntheticPrompts

CLIENT_COMMAND = "inference-endpoint"


def client_command(client_python: Path) -> Path:
    """The ``inference-endpoint`` command of the venv whose Python is given."""
    command = client_python.parent / CLIENT_COMMAND
    if not command.is_file():
        raise ConfigError(
            f"--client-python {client_python}: no {CLIENT_COMMAND} beside it; install the "
            "reference client into that venv (../shared/vendor/README.md)."
        )
    return command


def write_dataset(request: EndpointsRunRequest, path: Path) -> Path:
    """The synthetic prompts infermeter's engine would send, as JSONL ``prompt`` rows."""
    prompts = SyntheticPrompts(
        request.dataset_size,
        input_tokens=request.input_tokens,
        output_tokens=request.output_tokens,
        seed=request.seed,
    )
    rows = (
        json.dumps({"prompt": prompts.prompt(i).text})
        for i in range(request.dataset_size)
    )
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def point_argv(
    command: Path,
    request: EndpointsRunRequest,
    c: int,
    dataset: Path,
    report_dir: Path,
    tokenizer: str | None,
) -> list[str]:
    """The client's command line for one level."""
    url = request.sut_options["url"].split(",")[0].removesuffix("/").removesuffix("/v1")
    seeds = SEED_SETS.get(request.seed_set or "", {})
    argv = [
        str(command),
        "benchmark",
        "online",
        "--endpoints",
        url,
        "--model",
        request.sut_options["model"],
        "--dataset",
        f"perf:{dataset}",
        "--load-pattern",
        "concurrency",
        "--concurrency",
        str(c),
        "--num-samples",
        str(request.min_passes * request.dataset_size),
        "--duration",
        "0",
        "--max-output-tokens",
        str(request.output_tokens),
        "--streaming",
        "on",
        "--report-dir",
        str(report_dir),
        # one HTTP worker given time to start: its imports take long on small machines
        "--workers",
        "1",
        "--client.worker-initialization-timeout",
        "300",
        "--runtime.scheduler-random-seed",
        str(seeds.get("scheduler_rng_seed", request.seed)),
        "--runtime.dataloader-random-seed",
        str(seeds.get("sample_index_rng_seed", request.seed)),
    ]
    return [*argv, "--tokenizer", tokenizer] if tokenizer else argv


def run_reference_points(
    request: EndpointsRunRequest,
    client_python: Path,
    tokenizer: str | None = None,
    timeout_s: float = 3600.0,
) -> list[Path]:
    """Run every level with the reference client; returns the point folders. With
    ``request.accuracy_file`` §5.3's N levels also run the client's accuracy phase
    (runs/endpoints_reference_accuracy.py)."""
    request.validate(scored_here=False)  # the client's venv scores (probed below)
    command = client_command(client_python)
    accuracy = _accuracy_set(request, client_python)  # refused before any load
    writable_folder(request.out_dir, "--out")
    dataset = write_dataset(request, request.out_dir / "reference_dataset.jsonl")
    entries: list[dict[str, Any]] = []
    if accuracy is not None:
        path = write_accuracy_dataset(
            accuracy, request.out_dir / "reference_accuracy.jsonl"
        )
        perf = {"name": dataset.stem, "type": "performance", "path": str(dataset)}
        entries = [perf, accuracy_entry(accuracy, path, request.accuracy_metric)]
    levels = set(request.accuracy_levels())
    folders = []
    for i, c in enumerate(sorted(request.concurrency)):
        folder = request.out_dir / f"{i:02d}_c{c}"
        if c in levels and entries:
            config = point_config(request, c, entries, folder, tokenizer)
            yaml = write_point_config(config, request.out_dir / f"{i:02d}_c{c}.yaml")
            argv = [str(command), "benchmark", "from-config", "--config", str(yaml)]
            argv += ["--mode", "both"]
        else:
            argv = point_argv(command, request, c, dataset, folder, tokenizer)
        _run_client(argv, c, folder, timeout_s)
        if c in levels and accuracy is not None:
            client_scores(folder, accuracy.name)  # the client scored the pass
        _sidecar(folder, request, c, argv)
        folders.append(folder)
    return folders


def _accuracy_set(
    request: EndpointsRunRequest, client_python: Path
) -> AccuracySet | None:
    """The accuracy set, read and its scorer probed in the client's venv."""
    if request.accuracy_file is None:
        return None
    data = read_accuracy_set(
        request.accuracy_file,
        request.output_tokens,
        reference_field=request.accuracy_reference,
        name=request.accuracy_name,
    )
    check_client_scorer(client_python, request.accuracy_metric, timeout_s=300.0)
    return data


def _run_client(argv: list[str], c: int, folder: Path, timeout_s: float) -> None:
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    summary = folder / "performance" / "result_summary.json"
    if done.returncode != 0 or not summary.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        raise InfermeterError(
            f"the reference client failed at concurrency {c} (exit "
            f"{done.returncode}): {' '.join(tail)}"
        )


def _sidecar(
    folder: Path, request: EndpointsRunRequest, c: int, argv: list[str]
) -> None:
    problems = (
        [] if request.seed_set else ["unbound: no published seed set (--seed-set A)"]
    )
    block: dict[str, Any] = {
        "label": "MLPerf Endpoints reference client run, driven by infermeter",
        "engine": "endpoints-reference",
        "command": argv,
        "endpoints": {
            "seed_set": request.seed_set,
            "dataset_size": request.dataset_size,
            "passes": request.min_passes,
            "target_window_s": min_duration_s(c),
            "warmup": {
                "duration_s": 0.0,
                "requests_issued": 0,
                "requests_completed": 0,
                "data_source": "none: the reference client's warmup is off by default",
                "concurrency": 0,
            },
            "problems": problems,
        },
    }
    (folder / SIDECAR).write_text(json.dumps(block, indent=2) + "\n", encoding="utf-8")
