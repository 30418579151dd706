"""AccuracyOnly runs with the fake SUT: PASS on answers from the references, FAIL when perturbed.

One benchmark per metric family; ``--sut-opt wrong=0.9`` makes nine answers in
ten wrong in a way that family's metric sees.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import pytest

from infermeter.workloads.accuracy import code_exec
from tests.cli_main import run_main

# benchmark -> (metric checked, its value on a correct answer set, extra needed)
FAMILIES = {
    "resnet50": ("top1", 100.0, None),
    "retinanet": ("map", 100.0, "pycocotools"),
    "yolo": ("map", 100.0, "pycocotools"),
    "dlrm-v2": ("auc", 100.0, "sklearn"),
    "3d-unet": ("dice", 1.0, None),
    "whisper": ("word_accuracy", 100.0, "jiwer"),
    "rgat": ("accuracy", 1.0, None),
    "bert": ("exact_match", 100.0, None),
    "llama2-70b": ("rouge1", 100.0, None),
    "mixtral-8x7b": ("gsm8k", 100.0, None),
    "deepseek-r1": ("exact_match", 100.0, None),
    "llama3.1-405b": ("exact_match", 100.0, None),
    "qwen3-vl-235b-a22b": ("f1_hierarchical", 1.0, None),
}


def _accuracy(tmp_path, name: str, wrong: float) -> dict:
    folder = tmp_path / f"{name}-{wrong}"
    args = [
        "run",
        "--benchmark",
        name,
        "--scenario",
        "Offline",
        "--mode",
        "AccuracyOnly",
        "--sut",
        "fake",
        "--sut-opt",
        "answers=reference",
        "--sut-opt",
        f"wrong={wrong}",
        "--sut-opt",
        "latency_ms=0.1",
        "--sut-opt",
        "ttft_ms=0.1",
        "--sut-opt",
        "tpot_ms=0.01",
        "--total-sample-count",
        "12",
        "--output-dir",
        str(folder),
        "--store",
        str(tmp_path / "store.db"),
    ]
    result = run_main(*args)
    assert result.code in (0, 3), result.output
    return json.loads((folder / "run.json").read_text())["accuracy"]


@pytest.fixture(scope="module")
def accuracy(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, float], dict]:
    """One run per (benchmark, wrong) in this module: the mbxp check reads the
    mixtral-8x7b runs the family check made."""
    root = tmp_path_factory.mktemp("accuracy")
    return functools.cache(functools.partial(_accuracy, root))


def _metric(report: dict, name: str) -> dict:
    return next(m for m in report["metrics"] if m["metric"] == name)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_correct_answers_pass_perturbed_fail(accuracy, name: str) -> None:
    metric, perfect, extra = FAMILIES[name]
    if extra is not None:
        pytest.importorskip(extra)
    good = accuracy(name, 0.0)
    assert good["passed"] is True, good
    assert _metric(good, metric)["value"] == pytest.approx(perfect)
    bad = accuracy(name, 0.9)
    assert bad["passed"] is False, bad
    assert _metric(bad, metric)["value"] < perfect


@pytest.mark.skipif(
    code_exec.isolation_problem() is not None,
    reason=str(code_exec.isolation_problem()),
)
def test_mbxp_runs_the_code(accuracy) -> None:
    good = accuracy("mixtral-8x7b", 0.0)
    assert _metric(good, "mbxp")["value"] == 100.0
    bad = accuracy("mixtral-8x7b", 0.9)
    assert _metric(bad, "mbxp")["value"] < 100.0
    assert _metric(bad, "mbxp")["passed"] is False


def test_a_metric_infermeter_cannot_compute_never_passes(tmp_path) -> None:
    report = _accuracy(tmp_path, "wan-2.2-t2v-a14b", 0.0)
    vbench = _metric(report, "vbench_score")
    assert vbench["value"] is None and "VBench" in vbench["note"]
    assert report["passed"] is False
