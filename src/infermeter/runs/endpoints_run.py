"""``infermeter endpoints run``: a curve's points run by the MLPerf Endpoints v1.0 rules.

Per point: a warmup run at the point's concurrency (excluded from every figure,
declared in point.yaml, and the source of the rate that sizes the window), then the
measured run at fixed concurrency (§6.1) issuing a whole number of dataset passes:
enough to cover §6.2's minimum window at the warmup's rate, at least ``min_passes``
(1; 4 lets the steady state be ``windowable``, §4.4).
Prompts are drawn with replacement (performance runs) by a generator seeded from the
bound seed set's ``sample_index_rng_seed`` (§4.6), or from ``--seed`` and labelled
unbound. ``--duration`` shortens every window; such a point is labelled not
submittable. Streaming of every chunk is the HTTP SUT's default; TTFT counts to the
first non-empty text, reasoning or tool-call fragment (suts/sse.py). With
``accuracy_file``, §5.3's N points also run their accuracy pass right after the
performance run (runs/endpoints_accuracy.py): every row once, answers kept, scored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import ConfigError
from infermeter.loadgen.records import STATUS_OK, UNSET
from infermeter.outfile import writable_folder
from infermeter.runs.endpoints import result_summary, write_json
from infermeter.runs.endpoints_accuracy import (
    AccuracyOutcome,
    AccuracyPlan,
    check_metric,
    read_accuracy_set,
)
from infermeter.runs.endpoints_config import JsonlPrompts
from infermeter.runs.endpoints_rules import (
    SEED_SETS,
    accuracy_levels,
    check_points,
    min_duration_s,
)
from infermeter.runs.endpoints_steady import steady_state
from infermeter.runs.load import LoadResult, LoadSpec, run_load
from infermeter.suts.http_factory import create_http_sut
from infermeter.suts.openai_options import config_from_options
from infermeter.suts.prompts import Prompt, PromptSource, SyntheticPrompts

_BLOCK = 4096  # prompt indices drawn per generator block


@dataclass(frozen=True, slots=True)
class EndpointsRunRequest:
    """The endpoint, the levels and how closely the rules are followed."""

    sut_options: dict[str, str]
    concurrency: list[int]
    out_dir: Path
    c_max: int | None = None  # default: the highest level
    dataset_size: int = 1024
    input_tokens: int = 128
    output_tokens: int = 128
    seed_set: str | None = None
    seed: int = 0  # unbound runs only
    duration_s: float | None = None  # shortens every window (not submittable)
    warmup_requests: int | None = None  # default: 2 x concurrency, at least 8
    completion_timeout_s: float = 120.0
    min_passes: int = 1
    prompts_file: Path | None = None  # JSONL rows with a "prompt"; else synthetic
    partial: bool = False  # levels that are not a whole curve (not packageable)
    accuracy_file: Path | None = None  # JSONL prompt + reference: run accuracy passes
    accuracy_metric: str = "rouge"
    accuracy_reference: str | None = None  # the rows' reference field (else found)
    accuracy_name: str | None = None  # the accuracy dataset's name (else the stem)
    accuracy_at: list[int] | None = None  # default: §5.3's N points of the curve

    def validate(self, *, scored_here: bool = True) -> None:
        """Refuse bad input before any load. ``scored_here``: False when the
        reference client scores the accuracy passes in its own venv."""
        if self.seed_set is not None and self.seed_set not in SEED_SETS:
            raise ConfigError(
                f"--seed-set {self.seed_set!r} is not a published set "
                f"(known: {', '.join(SEED_SETS)})."
            )
        if self.duration_s is not None and not self.duration_s > 0:
            raise ConfigError(f"--duration must be > 0 (got {self.duration_s:g}).")
        if self.min_passes < 1:
            raise ConfigError(f"--min-passes must be >= 1 (got {self.min_passes}).")
        if self.dataset_size < 1:
            raise ConfigError(f"--dataset-size must be >= 1 (got {self.dataset_size}).")
        if self.warmup_requests is not None and self.warmup_requests < 0:
            raise ConfigError(f"--warmup must be >= 0 (got {self.warmup_requests}).")
        if not self.concurrency or min(self.concurrency) < 1:
            raise ConfigError("--concurrency needs levels >= 1, e.g. 1,2,4,8,16,32,40.")
        if not self.partial:
            check_points(self.concurrency, self.c_max or max(self.concurrency))
        if self.accuracy_file is not None:
            check_metric(self.accuracy_metric, library=scored_here)
            self._check_accuracy_at()

    def _check_accuracy_at(self) -> None:
        if self.accuracy_at is None and self.partial:
            raise ConfigError(
                "--accuracy-file with --partial needs --accuracy-at LEVELS: a partial "
                "list has no §5.3 mandatory points to choose from."
            )
        stray = sorted(set(self.accuracy_at or []) - set(self.concurrency))
        if stray:
            raise ConfigError(
                f"--accuracy-at {','.join(map(str, stray))}: not in --concurrency; "
                "an accuracy pass follows its level's performance run (§4.3)."
            )

    def accuracy_levels(self) -> list[int]:
        """Where accuracy passes run: --accuracy-at, else §5.3's N points."""
        if self.accuracy_file is None:
            return []
        if self.accuracy_at is not None:
            return sorted(self.accuracy_at)
        levels = self.concurrency
        return accuracy_levels(levels, check_points(levels, self.c_max or max(levels)))


class ResampledPrompts:
    """Query ``i`` gets dataset prompt ``order(i)``: drawn with replacement, seeded,
    the same on every client process (each block of indices has its own generator)."""

    def __init__(self, base: PromptSource, size: int, seed: int) -> None:
        self.base, self.size, self.seed = base, size, seed
        self._blocks: dict[int, np.ndarray] = {}

    def index(self, query: int) -> int:
        block = query // _BLOCK
        if block not in self._blocks:
            rng = np.random.default_rng([self.seed, block])
            self._blocks[block] = rng.integers(0, self.size, size=_BLOCK)
        return int(self._blocks[block][query % _BLOCK])

    def prompt(self, index: int) -> Prompt:
        return self.base.prompt(self.index(index))


@dataclass(slots=True)
class PointOutcome:
    """One measured point, its verdict under the rules, and where it was written."""

    concurrency: int
    result: LoadResult
    passes: int
    steady: dict[str, Any]
    warmup: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    folder: Path | None = None
    accuracy: AccuracyOutcome | None = None

    @property
    def meets_rules(self) -> bool:
        """Run as the rules ask (still infermeter's client: infermeter results)."""
        return not self.problems


def run_points(
    request: EndpointsRunRequest, on_point: Callable[[PointOutcome], None] | None = None
) -> list[PointOutcome]:
    """Run every level in order and write ``NN_cK/performance/result_summary.json``."""
    request.validate()
    seeds = SEED_SETS.get(request.seed_set or "", {})
    accuracy = None  # read first: a bad accuracy set stops the run before any load
    if request.accuracy_file is not None:
        data = read_accuracy_set(
            request.accuracy_file,
            request.output_tokens,
            reference_field=request.accuracy_reference,
            name=request.accuracy_name,
        )
        accuracy = AccuracyPlan.of(
            data,
            seeds.get("sample_index_rng_seed", request.seed),
            request.accuracy_levels(),
        )
    writable_folder(request.out_dir, "--out")
    config, key = config_from_options(request.sut_options)
    base: PromptSource = SyntheticPrompts(
        request.dataset_size,
        input_tokens=request.input_tokens,
        output_tokens=request.output_tokens,
        seed=request.seed,
    )
    if request.prompts_file is not None:
        base = JsonlPrompts(request.prompts_file, request.output_tokens)
    prompts = ResampledPrompts(
        base, request.dataset_size, seeds.get("sample_index_rng_seed", request.seed)
    )
    outcomes: list[PointOutcome] = []
    with contextlib.ExitStack() as stack:
        sut = stack.enter_context(
            contextlib.closing(create_http_sut(config, prompts, api_key=key))
        )
        for i, c in enumerate(sorted(request.concurrency)):
            outcome = _run_point(sut, request, c)
            outcome.folder = _write(outcome, request, i)
            if accuracy is not None and c in accuracy.levels:
                outcome.accuracy = accuracy.run(
                    stack,
                    lambda p: create_http_sut(config, p, api_key=key),
                    c,
                    outcome.folder / "accuracy",
                    metric=request.accuracy_metric,
                    timeout_s=request.completion_timeout_s,
                )
                outcome.problems.extend(outcome.accuracy.problems())
            outcomes.append(outcome)
            if on_point is not None:
                on_point(outcome)
    _write_index(outcomes, request)
    return outcomes


def _run_point(sut: Any, request: EndpointsRunRequest, c: int) -> PointOutcome:
    window_s = request.duration_s or float(min_duration_s(c))
    n_warm = (
        request.warmup_requests
        if request.warmup_requests is not None
        else max(8, 2 * c)
    )
    warm = _measure(sut, request, c, n_warm) if n_warm else None
    warmup = _warmup_block(warm, c)
    qps = warm.metrics.qps if warm is not None and warm.metrics.completed else 0.0
    n = request.dataset_size
    passes = max(request.min_passes, math.ceil(window_s * qps / n) if qps else 0)
    result = _measure(sut, request, c, passes * n)
    # judged against the rules' window, whatever --duration asked for
    steady = _steady(result, n, float(min_duration_s(c)))
    return PointOutcome(
        c, result, passes, steady, warmup, _problems(request, result, steady, c)
    )


def _measure(sut: Any, request: EndpointsRunRequest, c: int, count: int) -> LoadResult:
    spec = LoadSpec(
        mode="concurrency",
        concurrency=c,
        requests=count,
        seed=request.seed,
        completion_timeout_s=request.completion_timeout_s,
    )
    return run_load(sut, spec, sample_count=count)


def _warmup_block(warm: LoadResult | None, c: int) -> dict[str, Any]:
    """§6.3.3's declaration of the excluded warmup run."""
    if warm is None:
        return {
            "duration_s": 0.0,
            "requests_issued": 0,
            "requests_completed": 0,
            "data_source": "none: no warmup",
            "concurrency": 0,
        }
    return {
        "duration_s": round(warm.metrics.duration_ns / 1e9, 6),
        "requests_issued": warm.metrics.issued,
        "requests_completed": warm.metrics.completed,
        "data_source": "the performance dataset, drawn as the measured run draws it",
        "concurrency": c,
        "logs_retained": False,
    }


def _steady(result: LoadResult, pass_size: int, window_s: float) -> dict[str, Any]:
    phase = result.phase
    rec, n = phase.records, phase.samples_issued
    origin = phase.query_origin_ns[:n]
    done, first = rec.completed_ns[:n], rec.first_token_ns[:n]
    ok = (rec.status[:n] == STATUS_OK) & (done != UNSET) & (first != UNSET)
    tokens = rec.tokens_of(n)
    ttft = np.where(ok, first - origin, -1)
    multi = ok & (tokens > 1)
    tpot = np.where(multi, (done - first) // np.maximum(tokens - 1, 1), -1)
    order = np.argsort(rec.issued_ns[:n], kind="stable")
    return steady_state(
        rec.issued_ns[:n][order],
        ttft[order],
        tpot[order],
        pass_size=pass_size,
        min_window_s=window_s,
    )


def _problems(
    request: EndpointsRunRequest, result: LoadResult, steady: dict[str, Any], c: int
) -> list[str]:
    """Why this point could not be submitted as run (empty: it could)."""
    out: list[str] = []
    floor = min_duration_s(c)
    if request.duration_s is not None and request.duration_s < floor:
        out.append(
            f"--duration {request.duration_s:g} s shortens the §6.2 window ({floor} s)"
        )
    if request.seed_set is None:
        out.append("unbound: no published seed set (--seed-set A)")
    if steady["status"] != "windowable":
        out.append(f"steady state {steady['status']} ({steady['verdict']}), §4.4")
    m = result.metrics
    if m.unanswered or m.failed:
        out.append(f"{m.failed} failed, {m.unanswered} unanswered")
    return out


def _write(outcome: PointOutcome, request: EndpointsRunRequest, i: int) -> Path:
    result = outcome.result
    load = dataclasses.asdict(result.spec)
    load.pop("trace", None)
    extra = {
        "client": result.certification.as_dict(),
        "endpoints": {
            "rules": "MLPerf Endpoints v1.0",
            "seed_set": request.seed_set,
            "seeds": SEED_SETS.get(request.seed_set or "") or {"seed": request.seed},
            "sampling": "with replacement",
            "dataset_size": request.dataset_size,
            "passes": outcome.passes,
            "window_s": outcome.steady["window"]["duration_s"],
            "target_window_s": request.duration_s
            or min_duration_s(outcome.concurrency),
            "min_window_s": min_duration_s(outcome.concurrency),
            "warmup": outcome.warmup,
            "steady_state": outcome.steady,
            "meets_rules": outcome.meets_rules,
            "problems": outcome.problems,
        },
    }
    summary = result_summary(
        result.metrics,
        started_at=result.started_at,
        run_config={"load": load, "point": i},
        extra=extra,
    )
    folder = request.out_dir / f"{i:02d}_c{outcome.concurrency}" / "performance"
    write_json(folder / "result_summary.json", summary)
    return folder.parent


def _write_index(outcomes: list[PointOutcome], request: EndpointsRunRequest) -> None:
    rows = [
        {
            **o.result.metrics.curve_row(),
            "passes": o.passes,
            "steady_state": o.steady["status"],
            "meets_rules": o.meets_rules,
            "problems": o.problems,
            "accuracy": o.accuracy.summary() if o.accuracy else None,
        }
        for o in outcomes
    ]
    doc = {"label": "infermeter results (unverified)", "seed_set": request.seed_set}
    path = request.out_dir / "endpoints_run.json"
    path.write_text(
        json.dumps({**doc, "points": rows}, indent=2) + "\n", encoding="utf-8"
    )
