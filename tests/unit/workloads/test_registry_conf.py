"""The registry against the embedded mlperf.conf: every conf model is known and agrees."""

from __future__ import annotations

import dataclasses

import pytest

from infermeter.workloads import get_benchmark, list_benchmarks
from infermeter.workloads.conf_rules import conf_models, conf_problems

BUILTIN = [b for b in list_benchmarks() if not b.custom]


def test_conf_names_the_models_of_the_current_suite() -> None:
    models = set(conf_models())
    # The issue's list of then-missing benchmarks, as the conf spells them.
    for model in (
        "whisper",
        "rgat",
        "pointpainting",
        "qwen3-vl-235b-a22b",
        "wan-2.2-t2v-a14b",
        "yolo",
        "dlrm-v3",
        "llama3_1-8b-edge",
    ):
        assert model in models
    assert len(models) == 29


@pytest.mark.parametrize("model", conf_models())
def test_every_conf_model_is_in_the_registry(model: str) -> None:
    bench = get_benchmark(model)
    assert bench.conf_model == model
    base = model.removesuffix("-interactive")
    if base != model:
        assert get_benchmark(base).interactive_conf_model == model


@pytest.mark.parametrize("bench", BUILTIN, ids=lambda b: b.name)
def test_registry_agrees_with_the_conf(bench) -> None:
    assert conf_problems(bench) == []
    if bench.interactive_conf_model is not None:
        assert conf_problems(bench.interactive()) == []


def test_a_scenario_the_conf_does_not_define_is_reported() -> None:
    # What the table used to say: a Server latency for 3d-unet.
    wrong = dataclasses.replace(
        get_benchmark("3d-unet"),
        scenarios=("SingleStream", "Server", "Offline"),
        server_target_latency_ms=10,
    )
    problems = conf_problems(wrong)
    assert any(
        "lists Server but the conf defines no Server bound" in p for p in problems
    )
    assert any(
        "server_target_latency_ms is 10, the conf says None" in p for p in problems
    )


def test_a_value_off_the_conf_is_reported() -> None:
    wrong = dataclasses.replace(get_benchmark("llama2-70b"), interactive_tpot_ms=50)
    assert conf_problems(wrong) == [
        "llama2-70b: interactive_tpot_ms is 50, the conf's llama2-70b-interactive says 40.0"
    ]
    wrong = dataclasses.replace(get_benchmark("whisper"), equal_issue=False)
    assert conf_problems(wrong) == ["whisper: equal_issue is False, the conf says True"]


@pytest.mark.parametrize("bench", BUILTIN, ids=lambda b: b.name)
def test_every_fact_has_a_source(bench) -> None:
    assert bench.sources, f"{bench.name} has no source lines"
    assert bench.rules_round
    assert bench.accuracy, f"{bench.name} has no accuracy target"
    for target in bench.accuracy:
        assert target.source, f"{bench.name} {target.metric} has no source"
    assert set(bench.datacenter_scenarios) | set(bench.edge_scenarios) <= set(
        bench.scenarios
    )
    assert bench.datacenter_scenarios or bench.edge_scenarios or bench.notes


def test_names_and_aliases_are_unique() -> None:
    seen: dict[str, str] = {}
    for bench in BUILTIN:
        for name in (bench.name, *bench.aliases, *bench.conf_models):
            key = name.lower().replace("_", ".")
            assert seen.setdefault(key, bench.name) == bench.name, name
            assert get_benchmark(name) is bench


@pytest.mark.parametrize(
    ("name", "metric", "levels", "lower"),
    [
        ("whisper", "word_accuracy", (0.99,), (100 - 2.0671) * 0.99),
        ("rnnt", "word_accuracy", (0.99,), (100 - 7.452) * 0.99),
        ("rgat", "accuracy", (0.99,), 0.7286 * 0.99),
        ("pointpainting", "map", (0.999,), 0.5425 * 0.999),
        ("yolo", "map", (0.99, 0.95), 53.4 * 0.99),
        ("wan-2.2-t2v-a14b", "vbench_score", (0.99,), 69.7752),
        ("qwen3-vl-235b-a22b", "f1_hierarchical", (0.99,), 0.7903 * 0.99),
        ("dlrm-v3", "auc", (0.999,), 78.663 * 0.999),
        ("dlrm", "auc", (0.99, 0.999), 80.25 * 0.99),
        ("ssd-mobilenet", "map", (0.99,), 22 * 0.99),
        ("llama3.1-8b-edge", "rouge1", (0.99,), 39.06 * 0.99),
    ],
)
def test_new_accuracy_targets(name, metric, levels, lower) -> None:
    bench = get_benchmark(name)
    assert bench.accuracy_levels == levels
    assert bench.target(metric).bounds(levels[0])[0] == pytest.approx(lower, abs=1e-4)


def test_yolo_95_and_mixtral_upper_limit() -> None:
    assert get_benchmark("yolo").target("map").bounds(0.95)[0] == pytest.approx(50.73)
    tokens = get_benchmark("mixtral-8x7b").target("tokens_per_sample")
    assert tokens.bounds(0.99) == (pytest.approx(144.84 * 0.9), pytest.approx(160.49))
