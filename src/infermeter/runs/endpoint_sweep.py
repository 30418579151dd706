"""One call behind ``infermeter sweep``: build the HTTP SUT and prompts, sweep or search.

Prompts are synthetic word prompts of fixed lengths (one word = one token on
the mock server), or a JSONL trace's lengths and prefixes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from infermeter.errors import ConfigError
from infermeter.runs.load import LoadSpec
from infermeter.runs.sweep import Limits, SweepResult, find_peak, load_runner, sweep
from infermeter.runs.trace import TracePrompts, load_trace
from infermeter.suts.openai_http import OpenAIHttpSUT
from infermeter.suts.openai_options import config_from_options
from infermeter.suts.prompts import PromptSource, SyntheticPrompts


@dataclass(frozen=True, slots=True)
class SweepRequest:
    """What the user asked for: the endpoint, the load and the levels or search."""

    sut_options: dict[str, str]
    concurrency: list[int] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    search: bool = False
    limits: Limits = field(default_factory=Limits)
    start_rate: float = 1.0
    base: LoadSpec = field(default_factory=LoadSpec)
    input_tokens: int = 128
    output_tokens: int = 128
    samples: int = 1024
    trace: Path | None = None
    out_dir: Path | None = None


def execute_sweep(request: SweepRequest) -> SweepResult:
    """Run the sweep (or the peak search) against the endpoint and write the files."""
    modes = [bool(request.concurrency), bool(request.rates), request.search]
    if sum(modes) != 1:
        raise ConfigError(
            "Choose exactly one of --concurrency LIST, --rates LIST or --search"
        )
    config, key = config_from_options(request.sut_options)
    prompts, count = _prompts(request)
    with OpenAIHttpSUT(config, prompts, api_key=key) as sut:
        run = load_runner(sut, count)
        if request.search:
            return find_peak(
                run,
                request.base,
                request.limits,
                start_rate=request.start_rate,
                out_dir=request.out_dir,
            )
        if request.concurrency:
            base = _with_mode(request.base, "concurrency")
            levels: list[float] = [float(c) for c in request.concurrency]
        else:
            base = _with_mode(request.base, "rate")
            levels = list(request.rates)
        return sweep(run, base, levels, limits=request.limits, out_dir=request.out_dir)


def _with_mode(spec: LoadSpec, mode: str) -> LoadSpec:
    from dataclasses import replace

    return replace(spec, mode=mode)


def _prompts(request: SweepRequest) -> tuple[PromptSource, int]:
    if request.trace is not None:
        trace = load_trace(request.trace)
        return TracePrompts(trace), len(trace)
    prompts = SyntheticPrompts(
        request.samples,
        input_tokens=request.input_tokens,
        output_tokens=request.output_tokens,
        seed=request.base.seed,
    )
    return prompts, request.samples
