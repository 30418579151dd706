"""The world the README and --help examples run in: the files, runs and endpoints they name.

An example names files as a reader would have them (``user.conf``,
``runs/my_run``, ``open_orca.pkl``, ``mooncake.jsonl``...). The template
folder built here holds one of each; every example runs in a fresh copy, so
what one writes never changes what the next one reads.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from infermeter.loadgen.settings import Mode, Scenario
from infermeter.runs.request import RunRequest
from infermeter.runs.run import execute
from infermeter.testing import ManualClock

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "mlperf"
# The run the examples' ``results show`` / ``results rm`` name (by id and prefix).
STORED_RUN = "20261126T031500Z_llama2-70b_Server"


@dataclass
class World:
    """A template folder and what it offers."""

    template: Path
    base_run: Path  # a llama2-70b Server run
    accuracy_run: Path  # a resnet50 Offline AccuracyOnly run that passes
    urls: list[str] = field(default_factory=list)

    def copy_to(self, cwd: Path) -> None:
        shutil.copytree(self.template, cwd, dirs_exist_ok=True)

    def provide(self, cwd: Path, token: str, *, command: str) -> None:
        """Create ``token`` in ``cwd`` when it names a run folder the world lacks."""
        path = cwd / token.rstrip("/")
        if path.exists() or not _is_run_path(token) or command == "run":
            return
        source = self.accuracy_run if command == "accuracy" else self.base_run
        shutil.copytree(source, path)
        _set_run_id(path, path.name)


def _is_run_path(token: str) -> bool:
    return token.startswith(("runs/", "sweeps/")) and "." not in Path(token).name


def _set_run_id(folder: Path, run_id: str) -> None:
    doc = json.loads((folder / "run.json").read_text())
    doc["run_id"] = run_id
    (folder / "run.json").write_text(json.dumps(doc))


def _fake_run(folder: Path, store: Path, **fields: object) -> Path:
    request = RunRequest(
        sut="fake",
        output_dir=folder,
        store=store,
        index=False,
        **fields,  # type: ignore[arg-type]
    )
    execute(request, clock=ManualClock())
    return folder


def build_world(template: Path, urls: list[str]) -> World:
    """Write the template: runs, datasets, confs, a trace and a store with one run."""
    (template / "runs").mkdir(parents=True)
    store = template / "store.sqlite"
    base = _fake_run(
        template / ".base-run",
        store,
        scenario=Scenario.SERVER,
        target_qps=50.0,
        overrides={"min_duration_ms": 2000, "min_query_count": 100},
        total_sample_count=64,
    )
    accuracy = _fake_run(
        template / ".accuracy-run",
        store,
        benchmark="resnet50",
        scenario=Scenario.OFFLINE,
        mode=Mode.ACCURACY_ONLY,
        total_sample_count=32,
        sut_options={"answers": "reference"},
    )
    world = World(template, base, accuracy, urls)
    stored = template / "runs" / STORED_RUN
    world.provide(template, f"runs/{STORED_RUN}", command="results")
    from infermeter.results.store import Store

    with Store(store) as db:
        db.index_run(stored)
    _datasets(template)
    _confs(template)
    _trace(template / "mooncake.jsonl")
    _trajectories(template / "trajectories.jsonl")
    _audits(template, store)
    _endpoints_curve(template)
    _accuracy_set(template / "cnn_eval.jsonl")
    published = SHARED / "summary_results_v4.1.json"
    if published.exists():
        shutil.copy(published, template / "summary_results.json")
    return world


def _endpoints_curve(template: Path) -> None:
    """``curve/``: seven stored points (``endpoints package``'s input), and
    ``submission/my_org``: the tree packaged from them (``endpoints check``'s)."""
    from infermeter.runs.endpoints_package import PackageRequest, package
    from tests.endpoints_fixtures import store_curve

    curve = store_curve(template / "curve")
    package(PackageRequest([curve], template / "submission", model_name="llama3_1-8b"))


def _accuracy_set(path: Path) -> None:
    """``cnn_eval.jsonl``: eight prompts with reference summaries (``--accuracy-file``)."""
    rows = [
        {
            "prompt": f"summarize article {i}: " + " ".join(WORDS[i : i + 12]),
            "reference": " ".join(WORDS[i : i + 4]),
        }
        for i in range(8)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "two",
    "dogs",
    "ran",
    "past",
    "an",
    "old",
    "red",
    "barn",
    "and",
    "every",
    "bird",
    "sang",
    "of",
    "rain",
    "wind",
    "sun",
    "snow",
    "light",
    "dark",
]


def _datasets(folder: Path) -> None:
    """open_orca.pkl / .parquet with a word-level tokenizer.json that encodes them,
    and logs/: an accuracy log of that dataset (the reference answers)."""
    import pandas as pd
    import tokenizers

    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(WORDS)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.decoder = tokenizers.decoders.WordPiece()
    tok.save(str(folder / "tokenizer.json"))
    rows = []
    for i in range(16):
        prompt = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))
        # 294 tokens: the reference's mean answer length, which the check wants.
        answer = " ".join(WORDS[(3 * i + k) % len(WORDS)] for k in range(294))
        rows.append(
            {
                "input": prompt,
                "tok_input": tok.encode(prompt).ids,
                "output": answer,
                "tok_output": tok.encode(answer).ids,
            }
        )
    frame = pd.DataFrame(rows)
    frame.to_pickle(folder / "open_orca.pkl")
    frame.to_parquet(folder / "open_orca.parquet")
    # An official LoadGen accuracy log of it: int32 token ids, hex, per sample.
    (folder / "logs").mkdir()
    entries = [
        {
            "seq_id": i,
            "qsl_idx": i,
            "data": np.asarray(r["tok_output"], "<i4").tobytes().hex(),
        }
        for i, r in enumerate(rows)
    ]
    (folder / "logs" / "mlperf_log_accuracy.json").write_text(json.dumps(entries))


def _trajectories(path: Path) -> None:
    """4 synthetic agentic trajectories (``infermeter agentic`` examples)."""
    from infermeter.workloads.agentic.synth import synthetic_trajectories
    from infermeter.workloads.agentic.trajectories import write_trajectories

    write_trajectories(path, synthetic_trajectories(4, seed=0))


def _confs(folder: Path) -> None:
    # Short runs: the examples' own user.conf would hold the submitter's values.
    (folder / "user.conf").write_text(
        "# Quick tests (MLPerf's rule is 10 minutes).\n"
        "llama2-70b.Offline.min_duration = 100\n"
        "llama2-70b.Server.min_duration = 5000\n"
    )
    text = (ROOT / "src/infermeter/workloads/data/benchmarks.toml").read_text()
    first = re.search(r"\[\[benchmark\]\].*?(?=\n\[\[benchmark\]\])", text, re.S)
    assert first is not None
    block = re.sub(r'name = "[^"]+"', 'name = "my-resnet"', first.group(0), count=1)
    block = re.sub(r"aliases = \[[^\]]*\]", "aliases = []", block, count=1)
    block = re.sub(r"conf_models = \[[^\]]*\]", 'conf_models = ["resnet50"]', block)
    (folder / "my_benchmarks.toml").write_text(block + "\n")


def _audits(folder: Path, store: Path) -> None:
    """A TEST01 submission folder with its audit logs, and a TEST06 audit run's logs.

    TEST01 passes when its run's samples/s is within 10 % of the reference run's:
    1,000 a second over 2 s, not 20,000 over 1 s, where a busy machine's late
    completions (the reference at 16,564, the audit run at 19,988) failed it.
    """
    from tests.cli_main import run_main

    for test, benchmark, extra in (
        ("TEST01", "resnet50", ["--target-qps", "1000", "--min-duration", "2s",
                                "--min-query-count", "1000", "--sut-opt", "latency_ms=1"]),
        ("TEST06", "llama2-70b", []),
    ):  # fmt: skip
        out = folder / ".audits" / test
        done = run_main(
            "run", "--audit", test, "--sut", "audit-fake", "--benchmark", benchmark,
            "--scenario", "Offline", "--output-dir", str(out), "--store", str(store),
            *extra,
        )  # fmt: skip
        assert done.code == 0, done.output
    shutil.copytree(folder / ".audits" / "TEST01", folder / "resnet50" / "Offline")
    shutil.copytree(
        folder / ".audits" / "TEST01" / "runs" / "TEST01", folder / "runs" / "audit"
    )
    shutil.copytree(
        folder / ".audits" / "TEST06" / "runs" / "TEST06", folder / "audit_run"
    )


def _trace(path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = [
        {
            "timestamp": int(t),
            "input_length": int(rng.integers(16, 64)),
            "output_length": int(rng.integers(4, 12)),
            "hash_ids": [0, 1 + i % 3],
        }
        for i, t in enumerate(np.cumsum(rng.integers(10, 100, 12)))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
