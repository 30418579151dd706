"""Accuracy passes through the MLPerf Endpoints reference client (``endpoints run
--engine endpoints-reference --accuracy-file F``).

At §5.3's N levels infermeter writes the client's own YAML for the point: the
performance dataset of its other levels plus a dataset of ``type: accuracy``
whose ``accuracy_config`` names the client's scorer (``eval_method``), the
ground-truth column and, where the scorer needs one, the extractor. The client
runs it with ``benchmark from-config --mode both``: the performance phase, then
the accuracy phase at the same load pattern (the client mirrors it: the point's
concurrency), each row once. The client scores the answers itself and writes
``<report dir>/accuracy/accuracy_results.json`` (its ``accuracy_scores`` list),
the path infermeter's engine writes to, in a shape the checker reads as it reads
infermeter's: ``endpoints package`` copies it as it is. Levels without a pass run
as before (no ``accuracy/`` folder).

Scorers: ``rouge`` is the client's ``rouge`` (ROUGE-1/2/L/Lsum, ``gen_len``,
``gen_num``); ``exact_match`` is its ``string_match`` with the
``identity_extractor`` (stripped answer equals stripped ground truth, a fraction).
The client's ``rouge`` needs ``nltk``, ``evaluate`` and ``rouge_score`` in its venv,
the ``rouge`` metric that ``evaluate.load`` fetches from the Hugging Face Hub and
nltk's ``punkt_tab`` data: a probe in the client's Python refuses the run, with
the probe's reason, before any load where these are missing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError, InfermeterError
from infermeter.runs.endpoints_accuracy import RESULTS_FILE, AccuracySet
from infermeter.runs.endpoints_files import to_yaml
from infermeter.runs.endpoints_rules import SEED_SETS
from infermeter.runs.endpoints_run import EndpointsRunRequest

# infermeter's metric -> the client's scorer (eval_method) and extractor
SCORERS: dict[str, tuple[str, str | None]] = {
    "rouge": ("rouge", None),
    "exact_match": ("string_match", "identity_extractor"),
}
GROUND_TRUTH = "ground_truth"
# What the client's rouge scorer does before it scores anything; a failure exits
# with one line (nltk's own message spans lines of asterisks).
ROUGE_PROBE = """import sys
try:
    import evaluate, nltk, rouge_score
    nltk.sent_tokenize('One. Two.')
    evaluate.load('rouge')
except Exception as e:
    words = [w for w in str(e).split() if w.strip('*')]
    sys.exit(f"{type(e).__name__}: {' '.join(words)[:200]}")
"""


def check_client_scorer(client_python: Path, metric: str, timeout_s: float) -> None:
    """Refuse a metric the client cannot score here, naming why, before any load."""
    if metric not in SCORERS:
        raise ConfigError(
            f"--accuracy-metric {metric!r}: the reference engine scores "
            f"{', '.join(SCORERS)}."
        )
    if metric != "rouge":
        return
    try:
        done = subprocess.run(
            [str(client_python), "-c", ROUGE_PROBE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        failed, why = done.returncode != 0, _last_line(done.stderr)
    except subprocess.TimeoutExpired:
        failed, why = True, f"no answer in {timeout_s:.0f} s"
    if failed:
        raise ConfigError(
            "--accuracy-metric rouge with --engine endpoints-reference: the reference "
            f"client's rouge scorer cannot run here ({why}); it needs nltk, evaluate "
            "and rouge_score in the client's venv, the rouge metric evaluate.load "
            "fetches from the Hugging Face Hub and nltk's punkt_tab data. Install "
            "them where the hub is reachable, or use --accuracy-metric exact_match."
        )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no message"


def write_accuracy_dataset(data: AccuracySet, path: Path) -> Path:
    """The accuracy set as the client reads it: ``prompt`` and ground truth, in
    file order (the client issues each row once)."""
    rows = (
        json.dumps({"prompt": text, GROUND_TRUTH: ref})
        for text, ref in zip(data.texts, data.references, strict=True)
    )
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def accuracy_entry(data: AccuracySet, path: Path, metric: str) -> dict[str, Any]:
    """The YAML ``datasets`` entry of type accuracy for the client's scorer."""
    scorer, extractor = SCORERS[metric]
    config: dict[str, Any] = {"eval_method": scorer, "ground_truth": GROUND_TRUTH}
    if extractor is not None:
        config["extractor"] = extractor
    return {
        "name": data.name,
        "type": "accuracy",
        "path": str(path),
        "accuracy_config": config,
    }


def point_config(
    request: EndpointsRunRequest,
    c: int,
    datasets: list[dict[str, Any]],
    report_dir: Path,
    tokenizer: str | None,
) -> dict[str, Any]:
    """The client's YAML for one level: the same run as the reference engine's
    command line (``endpoints_reference.point_argv``), with the given datasets."""
    url = request.sut_options["url"].split(",")[0].removesuffix("/").removesuffix("/v1")
    seeds = SEED_SETS.get(request.seed_set or "", {})
    model: dict[str, Any] = {
        "name": request.sut_options["model"],
        "max_new_tokens": request.output_tokens,
        "streaming": "on",
    }
    if tokenizer:
        model["tokenizer_name"] = tokenizer
    return {
        "name": f"infermeter_c{c}",
        "type": "online",
        "model_params": model,
        "datasets": datasets,
        "settings": {
            "runtime": {
                "min_duration_ms": 0,
                "max_duration_ms": 0,
                "n_samples_to_issue": request.min_passes * request.dataset_size,
                "scheduler_random_seed": seeds.get("scheduler_rng_seed", request.seed),
                "dataloader_random_seed": seeds.get(
                    "sample_index_rng_seed", request.seed
                ),
            },
            "load_pattern": {"type": "concurrency", "target_concurrency": c},
            # one HTTP worker given time to start, as on the command line
            "client": {"num_workers": 1, "worker_initialization_timeout": 300.0},
        },
        "endpoint_config": {"endpoints": [url], "api_type": "openai"},
        "report_dir": str(report_dir),
    }


def write_point_config(config: dict[str, Any], path: Path) -> Path:
    path.write_text(to_yaml(config), encoding="utf-8")
    return path


def client_scores(folder: Path, name: str) -> dict[str, Any]:
    """The client's entry for dataset ``name`` in ``folder/accuracy``; refused
    when the client wrote none (its scorer failed, or the pass did not run)."""
    path = folder / "accuracy" / RESULTS_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InfermeterError(
            f"{path}: the reference client wrote no scores ({e})."
        ) from e
    entries = doc.get("accuracy_scores", []) if isinstance(doc, dict) else []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("dataset_name") == name:
            return entry
    raise InfermeterError(f"{path}: no entry for the accuracy dataset {name!r}.")
