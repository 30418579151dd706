"""Accuracy passes of ``infermeter endpoints run`` (§4.3, §5.3, §6.5): each sample
once, answers kept and scored, placed where the checker reads them."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from infermeter.errors import ConfigError
from infermeter.runs.endpoints_accuracy import (
    AccuracyOutcome,
    ShuffledPrompts,
    read_accuracy_set,
    score,
)
from infermeter.runs.endpoints_package import PackageRequest, package
from infermeter.runs.endpoints_plan import plan_curve
from infermeter.runs.endpoints_rules import SEED_SETS, accuracy_levels, compute_regions
from infermeter.runs.endpoints_run import (
    EndpointsRunRequest,
    ResampledPrompts,
    run_points,
)
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.suts.prompts import SyntheticPrompts
from tests.cli_main import run_main
from tests.endpoints_fixtures import LEVELS, store_curve

ROWS = 6
SEED_A = SEED_SETS["A"]["sample_index_rng_seed"]


def _accuracy_file(path: Path, rows: int = ROWS) -> Path:
    # each prompt is its own reference: the echo mock answers with the prompt's words
    lines = [
        json.dumps({"prompt": f"row{i} alpha beta", "reference": f"row{i} alpha beta"})
        for i in range(rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_accuracy_pass_issues_each_sample_once_performance_draws_with_replacement(
    tmp_path: Path,
) -> None:
    # performance row i has i + 1 words: the mock's count of prompt words received
    # tells which rows were sent, as often as they were
    perf = tmp_path / "perf.jsonl"
    perf.write_text("".join(f'{{"prompt": "{"w " * (i + 1)}"}}\n' for i in range(ROWS)))
    acc = _accuracy_file(tmp_path / "acc.jsonl")
    server = MockServer(MockConfig(mode="echo"))
    with server as url:
        (point,) = run_points(
            EndpointsRunRequest(
                sut_options={"url": url, "model": "m"},
                concurrency=[3],
                out_dir=tmp_path / "curve",
                dataset_size=ROWS,
                output_tokens=4,
                seed_set="A",
                duration_s=0.01,
                warmup_requests=0,
                min_passes=3,
                partial=True,
                prompts_file=perf,
                accuracy_file=acc,
                accuracy_at=[3],
            )
        )
    stats = server.mock.stats
    # performance: whole passes drawn with replacement by seed set A's generator,
    # so some row is not sent exactly once a pass (the seed fixes which)
    m = point.result.metrics
    assert m.issued == point.passes * ROWS and point.passes >= 3
    drawn = ResampledPrompts(None, ROWS, seed=SEED_A)  # type: ignore[arg-type]
    counts = Counter(drawn.index(q) for q in range(m.issued))
    assert set(counts.values()) != {point.passes}
    perf_words = sum((row + 1) * k for row, k in counts.items())
    acc_words = 3 * ROWS  # every accuracy row once, three words each
    assert stats["requests"] == m.issued + ROWS
    assert stats["prompt_tokens"] == perf_words + acc_words
    assert perf_words != point.passes * sum(range(1, ROWS + 1))
    # accuracy: every row exactly once, each answer its own row's (echoed) prompt
    assert point.accuracy is not None and point.folder is not None
    answers = (point.folder / "accuracy" / "answers.jsonl").read_text()
    rows = [json.loads(line) for line in answers.splitlines()]
    assert sorted(r["row"] for r in rows) == list(range(ROWS))
    assert [r["row"] for r in rows] != list(range(ROWS))  # shuffled, not file order
    assert all(r["answer"].split()[0] == f"row{r['row']}" for r in rows)
    assert point.accuracy.scores["rouge1"] == pytest.approx(100.0)
    results = json.loads(
        (point.folder / "accuracy" / "accuracy_results.json").read_text()
    )
    entry = results["acc"]
    assert (entry["dataset_type"], entry["num_samples"], entry["complete"]) == (
        "accuracy",
        ROWS,
        True,
    )
    # gen_len: the answers' characters (no sentence ends here to re-line)
    assert entry["score"]["gen_len"] == sum(len(r["answer"].strip()) for r in rows)
    assert not [p for p in point.problems if "accuracy" in p]


def test_gen_len_sums_the_answers_characters_as_rouge_reads_them() -> None:
    answers = ["  One sentence.   Two sentences!  ", "word", ""]  # "": unanswered
    refs = ["One sentence.", "word", "gone"]
    scores = score("rouge", answers, refs)
    # stripped, one sentence a line: "One sentence.\nTwo sentences!" is 13 + 1 + 14
    assert scores["gen_len"] == 28 + 4 + 0
    assert scores["gen_num"] == 3
    assert "gen_len" not in score("exact_match", answers, refs)


def test_the_shuffled_order_is_a_seeded_permutation() -> None:
    base = SyntheticPrompts(50, input_tokens=4, output_tokens=4)
    a, b = ShuffledPrompts(base, 50, seed=7), ShuffledPrompts(base, 50, seed=7)
    order = [a.index(q) for q in range(50)]
    assert sorted(order) == list(range(50)) and order != list(range(50))
    assert order == [b.index(q) for q in range(50)]
    assert a.prompt(5) == base.prompt(order[5])
    other = ShuffledPrompts(base, 50, seed=8)
    assert order != [other.index(q) for q in range(50)]
    # Python's shuffle from a fresh generator of the seed, as the reference client's
    # WithoutReplacementSampleOrder draws it
    expected = list(range(50))
    random.Random(7).shuffle(expected)
    assert order == expected


def test_accuracy_runs_at_one_point_per_mandatory_band() -> None:
    regions = compute_regions(40, 1)  # Low 2-4, Medium 5-12, High 13-40
    assert accuracy_levels(LEVELS, regions) == [1, 2, 8, 40]
    # C_max is the elected Offline point: its result fills High too
    assert accuracy_levels([1, 3, 6, 20, 30, 35, 40], regions) == [1, 3, 6, 40]
    plan = plan_curve(40, points=LEVELS)  # the plan marks the same points
    assert [p.concurrency for p in plan.points if p.accuracy] == [1, 2, 8, 40]


def test_accuracy_file_and_levels_are_refused_before_any_load(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p"}\n')
    with pytest.raises(ConfigError, match="line 1: no reference string"):
        read_accuracy_set(bad, 8)
    base = EndpointsRunRequest({}, LEVELS, tmp_path, accuracy_file=bad)
    for fields, message in (
        ({"accuracy_metric": "bleu"}, "--accuracy-metric 'bleu'"),
        ({"accuracy_at": [3]}, "--accuracy-at 3: not in --concurrency"),
        ({"partial": True, "concurrency": [4]}, "needs --accuracy-at"),
    ):
        with pytest.raises(ConfigError, match=message):
            dataclasses.replace(base, **fields).validate()  # type: ignore[arg-type]
    assert base.accuracy_levels() == [1, 2, 8, 40]


def test_package_places_accuracy_beside_the_point_and_says_what_is_missing(
    tmp_path: Path,
) -> None:
    store_curve(tmp_path / "curve")
    for folder in sorted((tmp_path / "curve").iterdir())[:2]:  # r1 and r2
        (folder / "accuracy").mkdir()
        (folder / "accuracy" / "accuracy_results.json").write_text('{"d": {}}')
    root = package(PackageRequest([tmp_path / "curve"], tmp_path / "out"))
    curve = root / "results" / "my_system" / "my_model"
    with_acc = sorted(p.parent.name for p in curve.glob("*/accuracy_results.json"))
    assert with_acc == ["r1", "r2"]
    note = (root / "docs" / "README.md").read_text()
    assert "at r1, r2; missing at r8, r40" in note
    assert "not made here" not in note


def test_run_refuses_a_bad_accuracy_set_with_one_line_and_writes_nothing(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "acc.jsonl"
    bad.write_text('{"prompt": "p", "answer": 4}\n')
    args = ["endpoints", "run", "--url", "http://127.0.0.1:9/v1", "--model", "m"]
    done = run_main(
        *args,
        "--concurrency",
        ",".join(map(str, LEVELS)),
        "--out",
        str(tmp_path / "curve"),
        "--accuracy-file",
        str(bad),
    )
    assert done.code == 2, done.output
    assert "line 1: no reference string" in done.stderr
    assert "Traceback" not in done.output
    assert not (tmp_path / "curve").exists()


def test_an_unanswered_accuracy_sample_makes_the_run_exit_3() -> None:
    from infermeter.cli.endpoints import _run_exit_code

    def point(answers: list[str | None] | None) -> SimpleNamespace:
        metrics = SimpleNamespace(completed=8, issued=8)
        acc = None
        if answers is not None:
            acc = AccuracyOutcome(
                1, list(range(len(answers))), answers, {}, "rouge", 0.1
            )
        return SimpleNamespace(result=SimpleNamespace(metrics=metrics), accuracy=acc)

    assert _run_exit_code([point(None), point(["a", "b"])]) == 0
    short = point(["a", None])
    assert short.accuracy.problems() == ["accuracy pass: 1 of 2 samples unanswered"]
    assert _run_exit_code([point(None), short]) == 3
