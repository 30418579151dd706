"""One call behind ``infermeter sweep``: build the HTTP SUT and prompts, sweep or search.

Prompts are synthetic word prompts of fixed lengths (one word = one token on
the mock server), or a JSONL trace's lengths and prefixes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from secrets import token_hex

from infermeter.clock import MonotonicClock
from infermeter.errors import ConfigError
from infermeter.loadgen.engine import PhaseWatcher
from infermeter.outfile import writable_folder
from infermeter.runs import server_metrics
from infermeter.runs.load import LoadResult, LoadSpec
from infermeter.runs.preflight import preflight
from infermeter.runs.sweep import (
    Limits,
    Runner,
    SweepResult,
    find_peak,
    load_runner,
    sweep,
)
from infermeter.runs.trace import TracePrompts, load_trace
from infermeter.suts.http_factory import create_http_sut
from infermeter.suts.openai_options import QSLPrompts, config_from_options
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import PromptSource, SyntheticPrompts
from infermeter.suts.sized_prompts import TokenSizedPrompts
from infermeter.suts.token_count import load_tokenizer
from infermeter.workloads.datasets.base import Sample, SampleSource
from infermeter.workloads.datasets.factory import synthetic_text
from infermeter.workloads.datasets.lengths import fixed
from infermeter.workloads.datasets.shapes import parse_prompt_shape


@dataclass(frozen=True, slots=True)
class SweepRequest:
    """What the user asked for: the endpoint, the load and the levels or search."""

    sut_options: dict[str, str]
    concurrency: list[int] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    search: bool = False
    replay: bool = False
    replay_speed: float = 1.0
    limits: Limits = field(default_factory=Limits)
    start_rate: float = 1.0
    base: LoadSpec = field(default_factory=LoadSpec)
    input_tokens: int = 128
    output_tokens: int = 128
    samples: int = 1024
    prompts: str | None = None  # --prompts shape (workloads/datasets/shapes.py)
    # Prometheus /metrics to scrape per point: None = each endpoint's own, [] = none.
    metrics_urls: list[str] | None = None
    metrics_interval_s: float = 1.0
    notes: list[str] = field(default_factory=list)  # info lines for the user
    trace: Path | None = None
    out_dir: Path | None = None
    preflight: bool = True  # check the endpoint before sending load
    force: bool = False  # replace a sweep already in out_dir (as run --force)

    def validate(self) -> None:
        """Numbers no sweep runs with, refused before any request is sent."""
        base, limits = self.base, self.limits
        above_zero = {
            "--ttft-ms": limits.ttft_ms,
            "--tpot-ms": limits.tpot_ms,
            "--start-rate": self.start_rate,
            "--speed": self.replay_speed,
            "--burstiness": base.burstiness,
            # a point stops after its requests, else its duration (replay: the trace)
            "--duration": None if base.requests or self.replay else base.duration_s,
            "--rates": min(self.rates, default=None),  # a list: its least
            "--concurrency": min(self.concurrency, default=None),
            "--input-tokens": self.input_tokens,
            "--output-tokens": self.output_tokens,
        }
        for flag, value in above_zero.items():
            if value is not None and not value > 0:
                raise ConfigError(f"{flag} must be > 0 (got {value:g}).")
        for flag, count in (
            ("--requests", base.requests),
            ("--warmup", base.warmup_requests),
        ):
            if count < 0:
                raise ConfigError(f"{flag} must be >= 0 (got {count:g}).")
        if not 0 < limits.percentile <= 100:
            raise ConfigError(
                f"--percentile must be in (0, 100] (got {limits.percentile:g})."
            )


# What a terminal shows while a point runs: called with the point's text and
# its expected length (None: until its requests are done); the context lasts
# as long as the point.
LiveLine = Callable[[str, float | None], contextlib.AbstractContextManager[object]]


def execute_sweep(
    request: SweepRequest,
    on_note: Callable[[str], None] | None = None,
    live: LiveLine | None = None,
    watcher: PhaseWatcher | None = None,
) -> SweepResult:
    """Run the sweep, search or replay against the endpoint and write the files.

    ``on_note`` gets the preflight's findings and what the prompt lengths count;
    ``watcher`` sees each point's measured phase as it runs (the live figures).
    """
    modes = [
        bool(request.concurrency),
        bool(request.rates),
        request.search,
        request.replay,
    ]
    if sum(modes) != 1:
        raise ConfigError(
            "Choose exactly one of --concurrency LIST, --rates LIST, "
            "--search or --replay"
        )
    if request.replay and request.trace is None:
        raise ConfigError("--replay needs --trace FILE.jsonl")
    request.validate()
    config, key = config_from_options(request.sut_options)
    note = on_note or (lambda line: None)
    if request.out_dir is not None:
        claim_sweep_folder(request.out_dir, force=request.force)
        note(f"sweep: results go to {request.out_dir}")
    prompts, count = _prompts(request, config)
    if isinstance(prompts, SyntheticPrompts | TokenSizedPrompts):
        note(f"prompts: {request.input_tokens} {_unit(prompts)} each")
    if request.preflight:
        report = preflight(config, prompts, key)
        for line in report.notes + report.warnings:
            note(f"preflight: {line}")
    with contextlib.closing(create_http_sut(config, prompts, api_key=key)) as sut:
        run = _scraping(
            load_runner(sut, count, watcher=watcher), request, list(config.urls)
        )
        points = len(request.concurrency or request.rates)
        run = _telling(run, note, points, live)
        limits, out = request.limits, request.out_dir
        if request.search:
            return find_peak(
                run, request.base, limits, start_rate=request.start_rate, out_dir=out
            )
        if request.replay:
            assert request.trace is not None
            trace = load_trace(request.trace).scaled(request.replay_speed)
            base = replace(request.base, mode="trace", trace=trace)
            return sweep(run, base, [0.0], limits=limits, out_dir=out)
        if request.concurrency:
            base = replace(request.base, mode="concurrency")
            levels: list[float] = [float(c) for c in request.concurrency]
        else:
            base = replace(request.base, mode="rate")
            levels = list(request.rates)
        return sweep(run, base, levels, limits=limits, out_dir=out)


def default_sweep_dir(root: Path = Path("runs")) -> Path:
    """``runs/sweep-<UTC time>``: where a sweep goes without --out."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    plain = root / f"sweep-{stamp}"
    return plain if not plain.exists() else root / f"{plain.name}_{token_hex(3)}"


def claim_sweep_folder(folder: Path, *, force: bool) -> None:
    """``folder`` for a new sweep: one holding a sweep is refused unless ``force``,
    which removes the old sweep's files (its points too: a rerun with fewer
    points must not leave stale ones for the report to plot), nothing else."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {str(folder)!r} is a file; pass a folder path")
    old = _sweep_files(folder)
    if old and not force:
        raise ConfigError(
            f"--out {str(folder)!r} already holds a sweep ({old[0].name}); pass "
            "another --out, or --force to replace it"
        )
    writable_folder(folder, "--out")
    for path in old:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def _sweep_files(folder: Path) -> list[Path]:
    """sweep.json and the point folders (``NN_label/performance/...``) in ``folder``."""
    if not folder.is_dir():
        return []
    points = [
        d
        for d in sorted(folder.iterdir())
        if d.is_dir()
        and _POINT.match(d.name)
        and (d / "performance" / "result_summary.json").is_file()
    ]
    summary = folder / "sweep.json"
    return ([summary] if summary.is_file() else []) + points


_POINT = re.compile(r"\d{2,}_(c\d+|r[0-9.e+-]+|trace)$")


def _telling(
    run: Runner, note: Callable[[str], None], levels: int, live: LiveLine | None
) -> Runner:
    """``run`` that says each point as it starts and what it measured when done
    (a search has no known count of points: no "of N"), with ``live`` showing
    it while it runs."""
    count = 0

    def told(spec: LoadSpec) -> LoadResult:
        nonlocal count
        count += 1
        of = f" of {levels}" if levels else ""
        what = _load_text(spec)
        start = time.monotonic()
        if live is None:
            note(f"point {count}{of}: {what}: running")
            result = run(spec)
        else:
            expected = None if spec.requests else spec.duration_s or None
            with live(f"point {count}{of}: {what}", expected):
                result = run(spec)
        m = result.metrics
        ttft = f", TTFT p90 {m.ttft_p90_ms:.0f} ms" if m.ttft_p90_ms else ""
        lost = f", {m.unanswered} unanswered" if m.unanswered else ""
        note(
            f"point {count}{of}: {what}: {m.completed} completed, {m.failed} failed"
            f"{lost}, {m.system_tps:,.1f} tokens/s{ttft} "
            f"({time.monotonic() - start:.1f} s)"
        )
        return result

    return told


def _load_text(spec: LoadSpec) -> str:
    if spec.mode == "concurrency":
        return f"concurrency {spec.concurrency}"
    return f"{spec.rate:g} requests/s" if spec.mode == "rate" else "trace replay"


def _unit(prompts: PromptSource) -> str:
    if isinstance(prompts, TokenSizedPrompts):
        return f"tokens of {prompts.tokenizer.name}"
    return (
        "words (one token each on infermeter's mock; a real tokenizer counts more: "
        "pass --sut-opt tokenizer=DIR_OR_NAME to count tokens)"
    )


def _scraping(run: Runner, request: SweepRequest, urls: list[str]) -> Runner:
    """``run`` that scrapes the endpoints' /metrics during each point, where they answer."""
    asked = request.metrics_urls
    if asked is not None and not asked:
        return run
    good, notes = server_metrics.probe(
        asked if asked is not None else [server_metrics.metrics_url(u) for u in urls]
    )
    request.notes.extend(notes)
    if not good:
        return run

    def scraped(spec: LoadSpec) -> LoadResult:
        clock = MonotonicClock()
        scraper = server_metrics.Scraper(
            good, clock, request.metrics_interval_s
        ).start()
        try:
            result = run(spec)
        finally:
            scraper.stop()
        result.server_metrics = scraper.document(result.phase.start_ns, urls)
        return result

    return scraped


def _prompts(request: SweepRequest, config: OpenAIConfig) -> tuple[PromptSource, int]:
    if request.trace is not None:
        trace = load_trace(request.trace)
        return TracePrompts(trace), len(trace)
    if request.prompts and request.prompts != "random":
        shape = parse_prompt_shape(request.prompts)
        source = synthetic_text(
            request.samples,
            shape,
            input_len=fixed(request.input_tokens),
            output_len=fixed(request.output_tokens),
            seed=request.base.seed,
        )
        return QSLPrompts(_Reader(source)), len(source)
    if config.tokenizer_file:
        sized = TokenSizedPrompts(
            request.samples,
            load_tokenizer(config.tokenizer_file),
            input_tokens=request.input_tokens,
            output_tokens=request.output_tokens,
            seed=request.base.seed,
        )
        return sized, request.samples
    prompts = SyntheticPrompts(
        request.samples,
        input_tokens=request.input_tokens,
        output_tokens=request.output_tokens,
        seed=request.base.seed,
    )
    return prompts, request.samples


class _Reader:
    """A sample source seen as a QSL with ``sample(i)`` (what QSLPrompts reads)."""

    def __init__(self, source: SampleSource) -> None:
        self._source = source

    def sample(self, index: int) -> Sample:
        return self._source.read(index % len(self._source))
