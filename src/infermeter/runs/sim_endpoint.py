"""The ``sim`` SUT: a simulated endpoint on loopback, benchmarked through the real HTTP path.

The factory starts ``serve-sim`` on loopback port 0 in a child process (its
own GIL: an in-process server thread delayed the client's sends by ~5 ms at
p99) and wraps the ``openai`` SUT pointed at it; ``close()`` stops both.
``with_sim_defaults`` gives ``infermeter run`` with no SUT its short default
run: the published Server rate of the simulated system, 20 s, a synthetic
dataset with MLPerf-like lengths. Results are simulated, never measurements.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import CompletionSink, QueryBatch, SystemUnderTest
from infermeter.loadgen.settings import Scenario
from infermeter.perfmodel.arrivals import ISL_SIGMA, OSL_SIGMA
from infermeter.perfmodel.specs import get_accelerator, get_workload, workloads
from infermeter.results.accelerators import normalise
from infermeter.results.compare import Comparison
from infermeter.results.headline import headline_results
from infermeter.results.published import PublishedResult
from infermeter.results.service import compare_run
from infermeter.runs.request import RunRequest
from infermeter.servers.sim import SimConfig, SimProcess, describe
from infermeter.suts.registry import SutContext, create_sut, register
from infermeter.workloads.datasets.lengths import LengthSpec

KIND = "sim"
SIM_OPTIONS = (
    "accelerator",
    "count",
    "precision",
    "tp",
    "time_scale",
    "chunk_ms",
    "prefix_cache_tokens",
)
NOT_MEASURED = "not a measurement"
# Defaults of the short run (the full MLPerf rule is 600 s, 24,576 samples).
DEFAULT_MIN_DURATION_MS = 20_000
DEFAULT_SAMPLES = 256
MAX_OUTPUT_TOKENS = 1024  # the Llama 2 70B reference generates at most 1,024 tokens
MAX_INPUT_TOKENS = 2048
# Intermediate chunks only show progress (TTFT and TPOT come from the first and
# last); fewer keep the in-process server and client cheap.
DEFAULT_CHUNK_MS = 500.0


class SimEndpointSUT:
    """The openai SUT against an in-process ``SimServer``; owns both."""

    def __init__(self, server: SimProcess, http: SystemUnderTest, name: str) -> None:
        self.server, self.http, self.name = server, http, name

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        self.http.issue_query(batch, sink)

    def flush_queries(self) -> None:
        self.http.flush_queries()

    @property
    def workers(self) -> int:
        return int(getattr(self.http, "workers", 1) or 1)

    @property
    def issue_ahead_ns(self) -> int:
        return int(getattr(self.http, "issue_ahead_ns", 0) or 0)

    def __getattr__(self, name: str) -> Any:
        # Remote-client extras (client_cpu_s, clock_error_bound_ns, scale_advice)
        # are the HTTP SUT's; missing ones stay missing.
        if name in ("client_cpu_s", "clock_error_bound_ns", "scale_advice"):
            return getattr(self.http, name)
        raise AttributeError(name)

    def stats(self) -> dict[str, Any]:
        """The client's counts plus the simulated endpoint's (steps, late steps)."""
        client = getattr(self.http, "stats", None)
        out: dict[str, Any] = dict(client()) if callable(client) else {}
        out["endpoint"] = self.server.stats()
        return out

    def send_times(self) -> tuple[Any, Any]:
        """(ids, clock ns) each request left the client (the openai SUT's)."""
        times: Callable[[], tuple[Any, Any]] = self.http.send_times  # type: ignore[attr-defined]
        return times()

    @property
    def urls(self) -> list[str]:
        """The simulated endpoint's base URL."""
        return [self.server.url]

    def routes(self) -> tuple[Any, Any] | None:
        """(ids, replica) of each request of a fleet (the openai SUT's)."""
        routes = getattr(self.http, "routes", None)
        return routes() if callable(routes) else None

    def close(self) -> None:
        close = getattr(self.http, "close", None)
        try:
            if callable(close):
                close()
        finally:
            self.server.stop()


def sim_config(options: dict[str, str], benchmark: str) -> SimConfig:
    """The simulated system from ``--sut-opt`` keys (defaults: 8x H100 SXM)."""
    o = _Numbers(options)
    tp = o.integer("tp")
    try:
        model = get_workload(benchmark.removesuffix("-interactive")).model
    except ConfigError:
        raise ConfigError(
            f"The sim SUT (the default) simulates LLM benchmarks only "
            f"({', '.join(sorted(workloads()))}); for {benchmark!r} pass --sut, "
            "e.g. --sut fake or --sut onnxruntime."
        ) from None
    return SimConfig(
        accelerator=options.get("accelerator", "h100-sxm"),
        count=o.integer("count") or 8,
        model=model,
        precision=options.get("precision") or None,
        tp=tp or None,
        time_scale=o.number("time_scale", 1.0),
        chunk_ms=o.number("chunk_ms", DEFAULT_CHUNK_MS),
        # Off unless asked: the calibration to published results assumes no
        # prefix reuse, and the default run repeats its samples.
        prefix_cache_tokens=o.integer("prefix_cache_tokens"),
    )


@register(KIND)
def _create(context: SutContext) -> SystemUnderTest:
    config = sim_config(context.options, context.benchmark)
    server = SimProcess(config)  # builds the system: bad names fail here
    url = server.start()
    passed = {k: v for k, v in context.options.items() if k not in SIM_OPTIONS}
    passed.update(url=url, model=config.name)
    try:
        http = create_sut("openai", dataclasses.replace(context, options=passed))
    except BaseException:
        server.stop()
        raise
    return SimEndpointSUT(server, http, describe(config, server.sim))


def published_server_rows(
    accelerator: str, count: int, benchmark: str
) -> list[PublishedResult]:
    """Built-in published Server rows of ``count`` x ``accelerator`` on ``benchmark``."""
    slug = normalise(get_accelerator(accelerator).name).slug
    base = benchmark.removesuffix("-99.9").removesuffix("-99")
    return [
        r
        for r in headline_results()
        if r.base_benchmark == base
        and r.scenario == "Server"
        and r.unit == "tokens/s"
        and r.total_accelerators == count
        and not r.preview
        and normalise(r.accelerator_raw).slug == slug
    ]


def with_sim_defaults(request: RunRequest, benchmark: str) -> RunRequest:
    """The short default run for the ``sim`` SUT; what the user set is kept.

    Every sim run names the system it simulates in its options (so in run.json):
    comparisons with published rows read it from there.
    """
    if request.sut != KIND:
        return request
    options = {"accelerator": "h100-sxm", "count": "8", **request.sut_options}
    if request.scenario is not Scenario.SERVER:
        return dataclasses.replace(request, sut_options=options)
    config = sim_config(options, benchmark)
    wl = get_workload(config.model)  # the model's workload: lengths, limits
    target = request.target_qps
    if target is None and not benchmark.endswith("-interactive"):
        rows = published_server_rows(config.accelerator, config.count, wl.key)
        if rows:  # the lowest published rate of this system, in queries/s
            target = min(r.value for r in rows) / wl.osl_mean
    overrides = dict(request.overrides)
    if request.user_conf is None:
        overrides.setdefault("min_duration_ms", DEFAULT_MIN_DURATION_MS)
    dataset = request.dataset_options
    if request.dataset is None:
        dataset = dataclasses.replace(
            dataset,
            input_len=dataset.input_len
            or _lognormal(wl.isl_mean, ISL_SIGMA, MAX_INPUT_TOKENS),
            output_len=dataset.output_len
            or _lognormal(wl.osl_mean, OSL_SIGMA, MAX_OUTPUT_TOKENS),
        )
    return dataclasses.replace(
        request,
        sut_options=options,
        target_qps=target,
        overrides=overrides,
        dataset_options=dataset,
        total_sample_count=request.total_sample_count
        or (DEFAULT_SAMPLES if request.dataset is None else None),
    )


def _lognormal(mean: float, sigma: float, max_len: int) -> LengthSpec:
    # The perfmodel's length distributions: lognormal with this mean, clipped.
    median = mean / math.exp(sigma**2 / 2.0)
    return LengthSpec("lognormal", a=median, b=sigma, max_len=max_len)


def sim_comparison(folder: Path, document: dict[str, Any]) -> Comparison:
    """A ``sim`` run beside the published rows of the system it simulates."""
    # The same call as ``compare`` and ``report``: one figure on every surface.
    cmp = compare_run(folder).comparison
    label = f"{document['sut']['name']} — {NOT_MEASURED}"
    notes = [*cmp.notes, _duration_note(document)]
    return dataclasses.replace(
        cmp,
        run=dataclasses.replace(cmp.run, label=label),
        notes=[n for n in notes if n],
    )


def _duration_note(document: dict[str, Any]) -> str:
    effective = document.get("settings", {}).get("effective", {})
    min_ms = effective.get("min_duration_ms") or 0
    if not min_ms or min_ms >= 600_000:
        return ""
    return (
        f"Short run ({min_ms / 1000:g} s of arrivals): Server tokens/s divides by the "
        "last query's completion, so the drain after the last arrival lowers it; "
        "use --min-duration 600s for the published rule."
    )


class _Numbers:
    def __init__(self, options: dict[str, str]) -> None:
        self._o = options

    def number(self, key: str, default: float) -> float:
        text = self._o.get(key)
        if text is None:
            return default
        try:
            return float(text)
        except ValueError:
            raise ConfigError(
                f"SUT option {key}={text!r} is not a number; e.g. --sut-opt {key}=8"
            ) from None

    def integer(self, key: str) -> int:
        return int(self.number(key, 0))
