"""What a run checks before it starts and records about its numbers afterwards.

Before: a token-latency run refuses a SUT that cannot time first tokens, an
OpenAI endpoint passes the preflight, and the planned length is said. After:
where the token counts came from, said once, with one warning for an estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import QuerySampleLibrary, SystemUnderTest
from infermeter.loadgen.schedule import planned_size
from infermeter.loadgen.settings import EffectiveSettings, Scenario
from infermeter.loadgen.stop import StopSignal
from infermeter.runs.folder import update_run_json
from infermeter.runs.preflight import preflight
from infermeter.suts.openai_options import config_from_options, prompts_for
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.token_count import describe, gap_warning, is_estimate, source_of

Note = Callable[[str], None]


def refuse_unmeasurable(
    sut: SystemUnderTest, settings: EffectiveSettings, benchmark: str
) -> None:
    """A run judged on TTFT/TPOT needs a SUT that sees first tokens (a stream)."""
    if getattr(sut, "streams", True):
        return
    if settings.is_token_run and settings.scenario is not Scenario.OFFLINE:
        raise ConfigError(
            f"{benchmark} {settings.scenario.value} is judged on TTFT and TPOT, which "
            "need streamed answers; drop stream=false (use --sut-opt stream=true)"
        )


def check_endpoint(
    options: dict[str, str],
    qsl: QuerySampleLibrary,
    note: Note | None,
    config: OpenAIConfig | None = None,
) -> dict[str, Any]:
    """The preflight of an OpenAI endpoint; its notes go to ``note`` as they come.

    ``config``: the SUT's own (its API follows the benchmark), else from ``options``.
    """
    parsed, key = config_from_options(options)
    config = config if isinstance(config, OpenAIConfig) else parsed
    report = preflight(config, prompts_for(qsl), key)
    if note is not None:
        for line in report.notes:
            note(f"preflight: {line}")
        for line in report.warnings:
            note(f"preflight: {line}")
    return report.as_dict()


def watch_reachability(
    sut: SystemUnderTest, stop: StopSignal | None = None
) -> StopSignal | None:
    """``stop`` (or a new signal) that the SUT also fires when its endpoint
    stops accepting connections."""
    reach = getattr(sut, "reachability", None)
    if reach is None:
        return stop
    stop = stop or StopSignal()
    reach.on_unreachable = stop.stop
    return stop


def planned_run(eff: EffectiveSettings, qsl_total_count: int) -> str:
    """One line saying how many queries the run issues and about how long it takes."""
    qps = eff.target_qps or 1.0
    min_s = eff.min_duration_ms / 1000
    if eff.scenario is Scenario.OFFLINE:
        samples = eff.samples_per_query
        seconds = samples / qps
        return (
            f"{samples:,} samples in one query at {qps:g} samples/s expected "
            f"≈ {_duration(seconds)}"
        )
    # The loaded set is what equal issue pads to: at most the dataset's samples.
    set_len = max(1, min(eff.performance_sample_count, qsl_total_count))
    queries, _ = planned_size(eff, set_len)
    by_time = math.ceil(qps * min_s)
    seconds = max(min_s, queries / qps)
    unit = "QPS" if eff.scenario is Scenario.SERVER else "queries/s expected"
    line = f"{queries:,} queries at {qps:g} {unit} ≈ {_duration(seconds)}"
    # Why that many: a run of hours must say what made it so long.
    if queries > max(eff.min_query_count, by_time) and queries % set_len == 0:
        line += (
            f" (equal issue: each of the {set_len:,} loaded samples as often); "
            "--performance-sample-count N shortens it"
        )
    elif eff.min_query_count > by_time:
        line += (
            f" (the minimum query count, {eff.min_query_count:,}); "
            "--min-query-count N shortens it"
        )
    else:
        line += f" (the minimum duration, {_duration(min_s)})"
    return line


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def mark_unmeasured(folder: Path, document: dict[str, Any]) -> dict[str, Any]:
    """A token run answered whole: TTFT and TPOT were not measured (null, never a number)."""
    if "tokens_per_second" not in document.get("metrics", {}):
        return document
    metrics = {**document["metrics"], "ttft_ns": None, "tpot_ns": None}
    return update_run_json(folder, metrics=metrics)


def token_counts(
    stats: dict[str, Any] | None, *, token_run: bool = True
) -> tuple[dict[str, Any] | None, list[str]]:
    """run.json's ``token_counts`` from the SUT's stats, and the warning an estimate earns.

    Only a token run (``use_token_latencies``) reports tokens/s and TPOT, so only
    it is warned; an image or video run's counts are just kept.
    """
    counts = (stats or {}).get("token_counts")
    if not isinstance(counts, dict):
        return None, []
    # Merged from several client processes: the source follows the summed samples.
    source = source_of({k: int(v) for k, v in (counts.get("samples") or {}).items()})
    counts = {**counts, "source": source, "description": describe(counts)}
    if not token_run:
        return counts, []
    warnings = []
    if is_estimate(counts):
        warnings.append(
            f"{counts['description']}: tokens/s and TPOT rest on it; pass "
            "--sut-opt tokenizer=DIR_OR_NAME for a re-count of the text, or use a "
            "server that sends usage for the server's own count"
        )
    gap = gap_warning(counts)
    if gap:
        warnings.append(gap)
    return counts, warnings
