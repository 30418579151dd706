"""One MLPerf benchmark as data: constraints, sample counts and accuracy targets.

The values live in ``data/benchmarks.toml``; this module only types and checks them.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from infermeter.errors import ConfigError
from infermeter.workloads.field_types import check_fields

SCENARIOS = ("SingleStream", "MultiStream", "Server", "Offline", "Interactive")
NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class AccuracyTarget:
    """One accuracy metric with its reference value and pass bounds.

    Lower bound: ``reference * level`` (level 0.99 or 0.999) unless
    ``lower_factor`` is set (a level-independent ``reference * lower_factor``)
    or an absolute ``min`` is given. Upper bound: ``reference * upper_factor``
    or ``max`` when set.
    """

    metric: str
    reference: float | None = None
    lower_factor: float | None = None
    upper_factor: float | None = None
    min: float | None = None
    max: float | None = None
    source: str = ""

    def bounds(self, level: float) -> tuple[float | None, float | None]:
        """(lower, upper) pass bounds at accuracy ``level`` (None = unbounded)."""
        lower = self.min
        if lower is None and self.reference is not None:
            factor = self.lower_factor if self.lower_factor is not None else level
            lower = self.reference * factor
        upper = self.max
        if upper is None and self.reference is not None and self.upper_factor:
            upper = self.reference * self.upper_factor
        return lower, upper

    def passes(self, value: float, level: float) -> bool:
        """Whether ``value`` lies within the bounds at ``level`` (inclusive)."""
        lower, upper = self.bounds(level)
        return (lower is None or value >= lower) and (upper is None or value <= upper)


@dataclass(frozen=True, slots=True)
class Benchmark:
    """An MLPerf (or custom) benchmark: what to run, under which rules."""

    name: str
    conf_models: tuple[str, ...]
    task: str
    dataset: str
    dataset_format: str
    scenarios: tuple[str, ...]
    performance_sample_count: int
    aliases: tuple[str, ...] = ()
    interactive_conf_model: str | None = None
    dataset_samples: int | None = None
    accuracy_samples: int | None = None
    datacenter_scenarios: tuple[str, ...] = ()
    edge_scenarios: tuple[str, ...] = ()
    rules_round: str = ""
    retired: bool = False
    server_target_latency_ms: float | None = None
    multistream_target_latency_ms: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    interactive_ttft_ms: float | None = None
    interactive_tpot_ms: float | None = None
    offline_min_query_count: int | None = None
    equal_issue: bool = False
    use_token_latencies: bool = False
    infer_token_latencies: bool = False
    token_latency_scaling_factor: int = 0
    response_dtype: str = "int32"
    accuracy_levels: tuple[float, ...] = (0.99,)
    accuracy: tuple[AccuracyTarget, ...] = ()
    synthetic_input_tokens: int | None = None
    synthetic_output_tokens: int | None = None
    synthetic_shape: tuple[int, ...] = ()
    notes: str = ""
    sources: tuple[str, ...] = ()
    custom: bool = field(default=False, compare=False)

    @property
    def conf_model(self) -> str:
        """The model name used in mlperf.conf / user.conf."""
        return self.conf_models[0]

    @property
    def is_llm(self) -> bool:
        """Generates tokens (TTFT/TPOT or inferred token latencies apply)."""
        return self.use_token_latencies or self.infer_token_latencies

    @property
    def server_target_latency_ns(self) -> int | None:
        if self.server_target_latency_ms is None:
            return None
        return int(self.server_target_latency_ms * NS_PER_MS)

    @property
    def ttft_ns(self) -> int | None:
        return None if self.ttft_ms is None else int(self.ttft_ms * NS_PER_MS)

    @property
    def tpot_ns(self) -> int | None:
        return None if self.tpot_ms is None else int(self.tpot_ms * NS_PER_MS)

    def target(self, metric: str) -> AccuracyTarget:
        """The accuracy target named ``metric``."""
        for target in self.accuracy:
            if target.metric == metric:
                return target
        known = ", ".join(t.metric for t in self.accuracy) or "none"
        raise ConfigError(
            f"Benchmark {self.name!r} has no accuracy metric {metric!r}. "
            f"Known: {known}."
        )

    def interactive(self) -> Benchmark:
        """The Interactive variant: a Server run with interactive TTFT/TPOT limits."""
        if self.interactive_conf_model is None:
            raise ConfigError(
                f"Benchmark {self.name!r} has no Interactive variant; "
                f"use one of its scenarios: {', '.join(self.scenarios)}."
            )
        return dataclasses.replace(
            self,
            name=f"{self.name}-interactive",
            aliases=(self.interactive_conf_model,),
            conf_models=(self.interactive_conf_model,),
            interactive_conf_model=None,
            scenarios=("Server",),
            datacenter_scenarios=("Server",) if self.datacenter_scenarios else (),
            edge_scenarios=(),
            ttft_ms=self.interactive_ttft_ms,
            tpot_ms=self.interactive_tpot_ms,
            interactive_ttft_ms=None,
            interactive_tpot_ms=None,
            offline_min_query_count=None,
        )


_FIELDS = {f.name: f for f in dataclasses.fields(Benchmark)}
_TARGET_FIELDS = {f.name for f in dataclasses.fields(AccuracyTarget)}
_HINTS = typing.get_type_hints(Benchmark)
_TARGET_HINTS = typing.get_type_hints(AccuracyTarget)
_REQUIRED = (
    "name",
    "conf_models",
    "task",
    "dataset",
    "dataset_format",
    "scenarios",
    "performance_sample_count",
)
_TUPLE_FIELDS = (
    "conf_models",
    "scenarios",
    "datacenter_scenarios",
    "edge_scenarios",
    "aliases",
    "accuracy_levels",
    "sources",
    "synthetic_shape",
)
_SCENARIO_FIELDS = ("scenarios", "datacenter_scenarios", "edge_scenarios")


def benchmark_from_dict(
    raw: Mapping[str, Any], *, origin: str, custom: bool
) -> Benchmark:
    """Build a Benchmark from one TOML table, rejecting unknown or missing fields."""
    name = str(raw.get("name", "?"))
    where = f"{origin}: benchmark {name!r}"
    _reject_unknown(raw, set(_FIELDS) - {"custom"}, where)
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise ConfigError(f"{where}: missing field(s) {', '.join(missing)}; add them.")
    check_fields(raw, _HINTS, where)
    levels = raw.get("accuracy_levels", [])
    if any(not 0 < level <= 1 for level in levels):
        raise ConfigError(
            f"{where}: accuracy_levels are shares of the reference in (0, 1], "
            f"such as 0.99 (got {levels!r})."
        )
    values: dict[str, Any] = dict(raw)
    for key in _TUPLE_FIELDS:
        if key in values:
            values[key] = tuple(values[key])
    values["accuracy"] = tuple(
        _target_from_dict(t, where) for t in raw.get("accuracy", [])
    )
    for key in _SCENARIO_FIELDS:
        bad = [s for s in values.get(key, ()) if s not in SCENARIOS]
        if bad:
            raise ConfigError(
                f"{where}: unknown scenario {bad[0]!r} in {key}. "
                f"Known: {', '.join(SCENARIOS)}."
            )
    runnable = set(values["scenarios"])
    for key in _SCENARIO_FIELDS[1:]:
        extra = [s for s in values.get(key, ()) if s not in runnable]
        if extra:
            raise ConfigError(
                f"{where}: {key} lists {extra[0]!r}, which 'scenarios' lacks; "
                "add it to scenarios."
            )
    if int(values["performance_sample_count"]) < 0:
        raise ConfigError(f"{where}: performance_sample_count must be >= 0.")
    try:
        return Benchmark(**values, custom=custom)
    except TypeError as exc:  # a wrongly typed value reaches the constructor
        raise ConfigError(f"{where}: {exc}") from None


def _target_from_dict(raw: Mapping[str, Any], where: str) -> AccuracyTarget:
    _reject_unknown(raw, _TARGET_FIELDS, f"{where} accuracy")
    if "metric" not in raw:
        raise ConfigError(f"{where}: an accuracy entry has no 'metric'; add one.")
    check_fields(raw, _TARGET_HINTS, f"{where} accuracy", signed=True)
    if raw.get("reference") is None and raw.get("min") is None:
        raise ConfigError(
            f"{where}: accuracy metric {raw['metric']!r} needs 'reference' or 'min'."
        )
    return AccuracyTarget(**raw)


def _reject_unknown(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: unknown field {key!r}.{hint}")
