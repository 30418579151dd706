"""The registry carries the spec's per-benchmark values (spec sections 3, 4, 6)."""

from __future__ import annotations

import pytest

from infermeter.errors import ConfigError
from infermeter.workloads import get_benchmark, list_benchmarks, load_benchmarks_file
from infermeter.workloads.registry import unregister_custom

REQUIRED = [
    "llama2-70b",
    "mixtral-8x7b",
    "gpt-j",
    "llama3.1-8b",
    "llama3.1-405b",
    "deepseek-r1",
    "gpt-oss-120b",
    "bert",
    "resnet50",
    "retinanet",
    "stable-diffusion-xl",
    "dlrm-v2",
    "3d-unet",
]

# name: (performance_sample_count, server target latency ms, TTFT ms, TPOT ms)
PERF = {
    "resnet50": (1024, 15, None, None),
    "retinanet": (64, 100, None, None),
    "bert": (10833, 130, None, None),
    "gpt-j": (13368, 20000, None, None),
    "llama2-70b": (24576, 0, 2000, 200),
    "mixtral-8x7b": (15000, 0, 2000, 200),
    "stable-diffusion-xl": (5000, 20000, None, None),
    "dlrm-v2": (204800, 60, None, None),
    "3d-unet": (43, None, None, None),
    "llama3.1-405b": (8313, 0, 6000, 175),
    "llama3.1-8b": (13368, 0, 2000, 100),
    "deepseek-r1": (4388, 0, 2000, 80),
    "gpt-oss-120b": (6396, 0, 3000, 80),
}

INTERACTIVE = {
    "llama2-70b": (450, 40, "llama2-70b-interactive"),
    "llama3.1-405b": (4500, 80, "llama3_1-405b-interactive"),
    "llama3.1-8b": (500, 30, "llama3_1-8b-interactive"),
    "deepseek-r1": (1500, 15, "deepseek-r1-interactive"),
    "gpt-oss-120b": (2000, 15, "gpt-oss-120b-interactive"),
}

# name: {metric: (lower bound at 99 %, lower at 99.9 % or None, upper or None)}
ACCURACY = {
    "llama2-70b": {
        "rouge1": (43.9869, 44.3868, None),
        "rouge2": (21.8148, 22.0132, None),
        "rougeL": (28.3300, 28.5876, None),
        "tokens_per_sample": (265.005, 265.005, 323.895),
    },
    "bert": {"f1": (89.965, 90.783, None)},
    "resnet50": {"top1": (75.695, None, None)},
    "mixtral-8x7b": {
        "rouge1": (45.5989 * 0.99, None, None),
        "gsm8k": (73.66 * 0.99, None, None),
        "mbxp": (60.16 * 0.99, None, None),
        "tokens_per_sample": (144.84 * 0.9, None, 145.9 * 1.1),
    },
    "llama3.1-405b": {
        "rougeL": (21.6666 * 0.99, None, None),
        "exact_match": (90.1335 * 0.99, None, None),
        "tokens_per_sample": (684.68 * 0.9, None, 684.68 * 1.1),
    },
    "llama3.1-8b": {
        "rouge1": (38.7792 * 0.99, None, None),
        "rougeLsum": (35.793 * 0.99, None, None),
        "gen_len": (8167644 * 0.9, None, 8167644 * 1.1),
    },
    "deepseek-r1": {
        "exact_match": (81.3582 * 0.99, None, None),
        "tokens_per_sample": (3886.2274 * 0.9, None, 3886.2274 * 1.1),
    },
    "gpt-oss-120b": {"exact_match": (83.13 * 0.99, None, None)},
    "dlrm-v2": {"auc": (80.31 * 0.99, 80.31 * 0.999, None)},
    "3d-unet": {"dice": (0.86170 * 0.99, 0.86170 * 0.999, None)},
    "retinanet": {"map": (37.55 * 0.99, None, None)},
    "stable-diffusion-xl": {
        "clip_score": (31.68631873, None, 31.81331801),
        "fid": (23.01085758, None, 23.95007626),
    },
}


def test_every_required_benchmark_is_registered() -> None:
    names = {b.name for b in list_benchmarks()}
    assert set(REQUIRED) <= names


@pytest.mark.parametrize("name", sorted(PERF))
def test_performance_values(name: str) -> None:
    bench = get_benchmark(name)
    count, latency, ttft, tpot = PERF[name]
    assert bench.performance_sample_count == count
    assert bench.server_target_latency_ms == latency
    assert (bench.ttft_ms, bench.tpot_ms) == (ttft, tpot)
    assert bench.use_token_latencies is (ttft is not None)


@pytest.mark.parametrize("name", sorted(INTERACTIVE))
def test_interactive_variants(name: str) -> None:
    ttft, tpot, conf_model = INTERACTIVE[name]
    bench = get_benchmark(f"{name}-interactive")
    assert (bench.ttft_ms, bench.tpot_ms) == (ttft, tpot)
    assert bench.conf_model == conf_model
    assert bench.scenarios == ("Server",)
    assert bench.ttft_ns == ttft * 1_000_000
    assert get_benchmark(conf_model) == bench
    assert "Interactive" in get_benchmark(name).scenarios


def test_mixtral_has_no_interactive() -> None:
    with pytest.raises(ConfigError, match="no Interactive variant"):
        get_benchmark("mixtral-8x7b-interactive")


@pytest.mark.parametrize("name", sorted(ACCURACY))
def test_accuracy_bounds(name: str) -> None:
    bench = get_benchmark(name)
    for metric, (low99, low999, upper) in ACCURACY[name].items():
        target = bench.target(metric)
        lower, high = target.bounds(0.99)
        assert lower == pytest.approx(low99, abs=1e-3)
        assert high == (pytest.approx(upper) if upper is not None else None)
        if low999 is not None:
            assert target.bounds(0.999)[0] == pytest.approx(low999, abs=1e-3)
            assert 0.999 in bench.accuracy_levels


def test_equal_issue_and_token_flags() -> None:
    assert get_benchmark("gptj").infer_token_latencies
    assert get_benchmark("gptj").token_latency_scaling_factor == 69
    assert not get_benchmark("gptj").use_token_latencies
    assert get_benchmark("3d-unet").equal_issue
    assert not get_benchmark("resnet50").equal_issue
    for name in ("llama2-70b", "deepseek-r1", "gpt-oss-120b", "llama3.1-405b"):
        assert get_benchmark(name).equal_issue
        assert get_benchmark(name).is_llm


def test_scenarios_allowed() -> None:
    assert get_benchmark("resnet50").scenarios == (
        "SingleStream",
        "MultiStream",
        "Server",
        "Offline",
    )
    assert get_benchmark("3d-unet").scenarios == ("SingleStream", "Offline")
    assert "SingleStream" not in get_benchmark("llama2-70b").scenarios


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("llama3_1-8b", "llama3.1-8b"),
        ("gptj", "gpt-j"),
        ("LLAMA2-70B-99.9", "llama2-70b"),
        ("sdxl", "stable-diffusion-xl"),
        ("resnet", "resnet50"),
        ("llama3_1-405b", "llama3.1-405b"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert get_benchmark(alias).name == name


def test_unknown_benchmark_suggests() -> None:
    with pytest.raises(
        ConfigError, match=r"Unknown benchmark 'llama2-7b'\. Did you mean"
    ):
        get_benchmark("llama2-7b")


def test_passes_is_inclusive_of_bounds() -> None:
    target = get_benchmark("llama2-70b").target("tokens_per_sample")
    assert target.passes(265.005, 0.99)
    assert not target.passes(264.9, 0.99)
    assert not target.passes(324.0, 0.999)


CUSTOM = """
[[benchmark]]
name = "my-chat"
conf_models = ["my-chat"]
task = "chat"
dataset = "ShareGPT"
dataset_format = "sharegpt"
scenarios = ["Server", "Offline"]
performance_sample_count = 100
ttft_ms = 500
tpot_ms = 50
use_token_latencies = true
[[benchmark.accuracy]]
metric = "tokens_per_sample"
reference = 200
lower_factor = 0.5
"""


def test_custom_benchmark_file(tmp_path) -> None:
    path = tmp_path / "b.toml"
    path.write_text(CUSTOM)
    try:
        (bench,) = load_benchmarks_file(path)
        assert bench.custom
        assert get_benchmark("MY-CHAT") is bench
        assert bench.target("tokens_per_sample").bounds(0.99) == (100.0, None)
        assert bench in list_benchmarks()
    finally:
        unregister_custom()
    with pytest.raises(ConfigError):
        get_benchmark("my-chat")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            CUSTOM.replace("ttft_ms", "tfft_ms"),
            r"unknown field 'tfft_ms'\. Did you mean 'ttft_ms'",
        ),
        (CUSTOM.replace('task = "chat"\n', ""), "missing field"),
        (CUSTOM.replace('"Server", "Offline"', '"Servr"'), "unknown scenario 'Servr'"),
        (
            CUSTOM.replace(
                "scenarios = ", 'edge_scenarios = ["SingleStream"]\nscenarios = '
            ),
            "edge_scenarios lists 'SingleStream', which 'scenarios' lacks",
        ),
        ("[[benchmark]\n", "not valid TOML"),
        ("x = 1\n", r"no \[\[benchmark\]\] tables"),
        (CUSTOM.replace("reference = 200\n", ""), "needs 'reference' or 'min'"),
        # Wrongly typed values: each was an internal error, a negative bound
        # or a string read as a list of one-letter scenarios.
        (
            CUSTOM.replace(
                "performance_sample_count = 100", 'performance_sample_count = "a"'
            ),
            "performance_sample_count must be a whole number >= 0 \\(got 'a'\\)",
        ),
        (
            CUSTOM.replace("ttft_ms = 500", "ttft_ms = -5"),
            "ttft_ms must be a number >= 0",
        ),
        (
            CUSTOM.replace("tpot_ms = 50", 'tpot_ms = "fast"'),
            "tpot_ms must be a number",
        ),
        (CUSTOM.replace("tpot_ms = 50", "tpot_ms = nan"), "tpot_ms must be a number"),
        (
            CUSTOM.replace('["Server", "Offline"]', '"Offline"'),
            "scenarios must be a list \\(got 'Offline'\\)",
        ),
        (
            CUSTOM.replace("use_token_latencies = true", "use_token_latencies = 1"),
            "use_token_latencies must be true or false",
        ),
        (
            CUSTOM.replace("scenarios = ", "accuracy_levels = [99]\nscenarios = "),
            r"accuracy_levels are shares of the reference in \(0, 1\]",
        ),
        (
            CUSTOM.replace("reference = 200", 'reference = "x"'),
            "reference must be a number",
        ),
    ],
)
def test_bad_custom_file(tmp_path, text: str, match: str) -> None:
    path = tmp_path / "b.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_benchmarks_file(path, register=False)


def test_missing_custom_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match="Cannot read benchmark file"):
        load_benchmarks_file(tmp_path / "nope.toml")
