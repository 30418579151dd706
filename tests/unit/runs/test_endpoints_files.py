"""Steady state, resampling and the packaged tree of ``infermeter endpoints``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infermeter.errors import ConfigError
from infermeter.runs.endpoints_files import FILL_IN_MARK, summary_for_checker, to_yaml
from infermeter.runs.endpoints_package import PackageRequest, package
from infermeter.runs.endpoints_run import ResampledPrompts
from infermeter.runs.endpoints_steady import steady_state
from infermeter.suts.prompts import SyntheticPrompts
from tests.endpoints_fixtures import LEVELS, store_curve, store_point


def _flat(n: int, gap_ns: int = 1_000_000) -> tuple[Any, Any, Any]:
    issued = np.arange(n, dtype=np.int64) * gap_ns
    return issued, np.full(n, 5_000_000, np.int64), np.full(n, 1_000_000, np.int64)


def test_four_flat_passes_over_the_window_are_windowable() -> None:
    issued, ttft, tpot = _flat(40, gap_ns=100_000_000)  # 3.9 s of issue time
    block = steady_state(issued, ttft, tpot, pass_size=10, min_window_s=3.0)
    assert (block["status"], block["verdict"]) == ("windowable", "STEADY STATE")
    assert block["window"]["super_pass_end"] == 4
    assert block["window"]["duration_s"] == pytest.approx(3.9)
    assert set(block["state"].values()) == {"Plateau"}


def test_short_windows_few_passes_and_drift_are_not_windowable() -> None:
    issued, ttft, tpot = _flat(40, gap_ns=100_000_000)
    short = steady_state(issued, ttft, tpot, pass_size=10, min_window_s=600)
    assert short["status"] == "insufficient_duration"
    few = steady_state(issued[:30], ttft[:30], tpot[:30], pass_size=10, min_window_s=1)
    assert few["status"] == "insufficient_passes"
    rising = ttft + np.arange(40, dtype=np.int64) * 1_000_000  # TTFT doubles and more
    drift = steady_state(issued, rising, tpot, pass_size=10, min_window_s=1)
    assert (drift["status"], drift["verdict"]) == (
        "insufficient_duration",
        "drifting_up",
    )
    assert drift["state"]["ttft_p90"] == "Drifting Up"
    assert drift["state"]["tpot_p90"] == "Plateau"


def test_prompts_are_drawn_with_replacement_the_same_way_each_time() -> None:
    base = SyntheticPrompts(8, input_tokens=4, output_tokens=4)
    a, b = ResampledPrompts(base, 8, seed=7), ResampledPrompts(base, 8, seed=7)
    order = [a.index(i) for i in range(10_000)]
    assert order == [b.index(i) for i in range(10_000)]
    assert set(order) == set(range(8))
    assert len(set(order[:8])) < 8 or len(set(order[8:16])) < 8  # repeats within a pass
    assert a.prompt(3) == base.prompt(order[3])
    assert order != [ResampledPrompts(base, 8, seed=8).index(i) for i in range(10_000)]


def test_package_writes_the_tree_with_marked_fields(tmp_path: Path) -> None:
    store_curve(tmp_path / "curve")
    root = package(PackageRequest([tmp_path / "curve"], tmp_path / "out"))
    curve = root / "results" / "my_system" / "my_model"
    assert sorted(p.name for p in curve.iterdir()) == sorted(f"r{c}" for c in LEVELS)
    point = (curve / "r40" / "point.yaml").read_text()
    assert 'region: "high_concurrency"' in point and "min_duration_ms: 1200000" in point
    assert f'seed_set: "{FILL_IN_MARK}' in point  # a sweep's points are unbound
    desc = json.loads((curve / "r1" / "system_desc.json").read_text())
    assert desc["max_supported_concurrency"] == 40
    assert desc["node_types"][0]["driver"].startswith(FILL_IN_MARK)
    summary = json.loads((curve / "r1" / "result_summary.json").read_text())
    assert summary["system_tps"] == pytest.approx(150.0)  # 300 tokens / 2 s
    assert summary["tps_per_user"] == pytest.approx(500.0)  # 1000 / 2 ms
    assert (root / "src" / "infermeter" / "README.md").is_file()


def test_package_refuses_what_the_rules_refuse_and_writes_nothing(
    tmp_path: Path,
) -> None:
    for i, c in enumerate([1, 2, 4, 8, 16, 32]):
        store_point(tmp_path / "six", c, i)
    with pytest.raises(ConfigError, match=r"point-count.*region-computation"):
        package(PackageRequest([tmp_path / "six"], tmp_path / "out"))
    store_point(tmp_path / "rate", 8, 0, mode="rate")
    with pytest.raises(ConfigError, match="fixed-concurrency"):
        package(PackageRequest([tmp_path / "rate"], tmp_path / "out"))
    store_curve(tmp_path / "curve")
    with pytest.raises(ConfigError, match="seed sets"):
        package(PackageRequest([tmp_path / "curve"], tmp_path / "out", seed_set="A"))
    assert not (tmp_path / "out" / "my_org").exists()
    assert not list((tmp_path / "out").glob(".package-*"))


def test_summary_for_checker_and_yaml_are_plain() -> None:
    assert "system_tps" not in summary_for_checker({"duration_ns": 0})
    text = to_yaml({"a": {"b": [1, "x: y"], "c": None, "d": {}}, "e": True})
    assert text == 'a:\n  b:\n    - 1\n    - "x: y"\n  c: null\n  d: {}\ne: true\n'


def test_a_reference_client_folder_is_packaged_with_its_own_config(
    tmp_path: Path,
) -> None:
    curve = store_curve(tmp_path / "curve")
    point = curve / "06_c40"
    summary_path = point / "performance" / "result_summary.json"
    summary = json.loads(summary_path.read_text())
    del summary["infermeter"]  # as the reference client writes it
    summary["run_config"] = {
        "load_pattern": {"type": "concurrency", "target_concurrency": 40}
    }
    summary["tpot"]["percentiles"] = {"90.0": 2_000_000}  # its keys
    summary_path.write_text(json.dumps(summary))
    (point / "config.yaml").write_text("name: online_benchmark\n")
    (point / "infermeter_point.json").write_text(
        json.dumps({"engine": "endpoints-reference"})
    )
    root = package(PackageRequest([curve], tmp_path / "out"))
    packaged = root / "results" / "my_system" / "my_model" / "r40"
    assert (packaged / "config.yaml").read_text() == "name: online_benchmark\n"
    assert (
        json.loads((packaged / "result_summary.json").read_text())["tps_per_user"]
        == 500.0
    )
