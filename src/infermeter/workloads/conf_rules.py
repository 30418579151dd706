"""Check a registry entry against the embedded mlperf.conf: the conf is the rulebook.

``conf_models()`` lists every model the conf names; ``conf_problems(bench)`` lists
each place where a benchmark disagrees with the values the conf sets for its model
(latencies, sample counts, equal issue, token latencies), and each scenario the
benchmark lists that the conf does not define for it.

What "defines" means: every model gets SingleStream, MultiStream and Offline
from the conf's ``*`` lines; Server needs a model-specific Server bound
(``target_latency`` or ``ttft_latency``), because the ``*`` default of 10 ms is a
placeholder, not a rule; Interactive needs the ``<model>-interactive`` entry's
TTFT bound.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from infermeter.loadgen.conf import default_mlperf_conf_text, load_conf_text
from infermeter.workloads.benchmark import Benchmark

ConfValues = Mapping[tuple[str, str], str]  # (scenario, key) -> value, one model
WILDCARD_SCENARIOS = ("SingleStream", "MultiStream", "Offline")


@functools.cache
def _by_model() -> dict[str, dict[tuple[str, str], str]]:
    models: dict[str, dict[tuple[str, str], str]] = {}
    for entry in load_conf_text(default_mlperf_conf_text(), "<embedded mlperf.conf>"):
        models.setdefault(entry.model, {})[(entry.scenario, entry.key)] = entry.value
    return models


def conf_models() -> list[str]:
    """Every model the embedded mlperf.conf names (``*`` excluded), sorted."""
    return sorted(m for m in _by_model() if m != "*")


def conf_values(model: str) -> ConfValues:
    """The (scenario, key) -> value lines the conf sets for ``model`` itself."""
    return _by_model().get(model, {})


def defines_scenario(bench: Benchmark, scenario: str) -> bool:
    """Whether the conf defines ``scenario`` for ``bench`` (see the module doc)."""
    if scenario in WILDCARD_SCENARIOS:
        return True
    if scenario == "Interactive":
        model = bench.interactive_conf_model
        return model is not None and ("Server", "ttft_latency") in conf_values(model)
    own = conf_values(bench.conf_model)
    return ("Server", "target_latency") in own or ("Server", "ttft_latency") in own


def conf_problems(bench: Benchmark) -> list[str]:
    """Each disagreement between ``bench`` and the embedded conf (empty: none)."""
    problems = [
        f"{bench.name}: lists {s} but the conf defines no {s} bound for "
        f"{bench.conf_model!r}"
        for s in bench.scenarios
        if not defines_scenario(bench, s)
    ]
    own = conf_values(bench.conf_model)
    if not own:
        return [*problems, f"{bench.name}: the conf has no model {bench.conf_model!r}"]
    for field, expected in _expected(bench, own).items():
        actual = getattr(bench, field)
        if actual != expected:
            problems.append(
                f"{bench.name}: {field} is {actual!r}, the conf says {expected!r}"
            )
    if bench.interactive_conf_model is not None:
        problems += _interactive_problems(bench)
    return problems


def _number(value: str | None) -> float | None:
    return None if value is None else float(value)


def _expected(bench: Benchmark, own: ConfValues) -> dict[str, object]:
    """Registry field -> the value the conf implies (only fields the conf decides)."""

    def any_scenario(key: str) -> str | None:
        return own.get(("*", key))

    expected: dict[str, object] = {
        "server_target_latency_ms": _number(own.get(("Server", "target_latency"))),
        "multistream_target_latency_ms": _number(
            own.get(("MultiStream", "target_latency"))
        ),
        "ttft_ms": _number(own.get(("Server", "ttft_latency"))),
        "tpot_ms": _number(own.get(("Server", "tpot_latency"))),
        "offline_min_query_count": _int(own.get(("Offline", "min_query_count"))),
        "equal_issue": any_scenario("sample_concatenate_permutation") == "1",
        "use_token_latencies": any_scenario("use_token_latencies") == "1",
        "infer_token_latencies": any_scenario("infer_token_latencies") == "1",
        "token_latency_scaling_factor": _int(
            any_scenario("token_latency_scaling_factor")
        )
        or 0,
    }
    count = _int(any_scenario("performance_sample_count_override"))
    if count is not None:  # 0 means "the QSL's own count": the dataset size
        expected["performance_sample_count"] = count or bench.dataset_samples
    accuracy = _int(any_scenario("accuracy_sample_count_override"))
    if accuracy is not None:
        expected["accuracy_samples"] = accuracy
    return expected


def _int(value: str | None) -> int | None:
    return None if value is None else int(value, 0)


def _interactive_problems(bench: Benchmark) -> list[str]:
    model = bench.interactive_conf_model or ""
    inter = conf_values(model)
    pairs = (
        ("interactive_ttft_ms", ("Server", "ttft_latency")),
        ("interactive_tpot_ms", ("Server", "tpot_latency")),
    )
    return [
        f"{bench.name}: {field} is {getattr(bench, field)!r}, the conf's {model} "
        f"says {_number(inter.get(key))!r}"
        for field, key in pairs
        if getattr(bench, field) != _number(inter.get(key))
    ]
