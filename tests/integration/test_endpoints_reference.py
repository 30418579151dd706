"""One point against the mock run by both engines: infermeter's and the MLPerf
Endpoints reference client (mlcommons/endpoints, in its own Python 3.12 venv).

Skipped unless INFERMETER_ENDPOINTS_CLIENT names that venv's Python (install it as
../shared/vendor/README.md says) and ``tokenizers`` is importable: the client counts
tokens with a tokenizer, and a word-level one over the mock's words stands in for a
Hugging Face download.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from tests.endpoints_fixtures import word_tokenizer

from infermeter.runs.endpoints_package import read_points
from infermeter.runs.endpoints_reference import run_reference_points
from infermeter.runs.endpoints_run import EndpointsRunRequest, run_points
from infermeter.servers.mock import MockConfig, MockProcess

pytestmark = pytest.mark.integration
CLIENT = os.environ.get("INFERMETER_ENDPOINTS_CLIENT")
OUT_TOKENS = 16
DATASET = 16
PASSES = 4


@pytest.fixture(scope="module")
def client() -> Path:
    if not CLIENT or not Path(CLIENT).is_file():
        pytest.skip(
            "INFERMETER_ENDPOINTS_CLIENT (the reference client's Python) is not set"
        )
    pytest.importorskip("tokenizers")
    return Path(CLIENT)


def test_both_engines_run_the_same_point(tmp_path: Path, client: Path) -> None:
    timed = MockConfig(
        mode="timed",
        ttft="const:0.01",
        itl="const:0.002",
        output_tokens=f"const:{OUT_TOKENS}",
    )
    tokenizer = word_tokenizer(tmp_path / "tokenizer")
    with MockProcess(timed) as url:
        ours = EndpointsRunRequest(
            sut_options={"url": url, "model": "m"},
            concurrency=[4],
            out_dir=tmp_path / "ours",
            dataset_size=DATASET,
            input_tokens=16,
            output_tokens=OUT_TOKENS,
            seed_set="A",
            duration_s=0.01,  # the passes decide: PASSES of DATASET
            warmup_requests=0,
            min_passes=PASSES,
            partial=True,
        )
        run_points(ours)
        theirs = dataclasses.replace(ours, out_dir=tmp_path / "theirs")
        run_reference_points(theirs, client, tokenizer=str(tokenizer))
    [a] = read_points([tmp_path / "ours"])
    [b] = read_points([tmp_path / "theirs"])
    assert a.concurrency == b.concurrency == 4
    n = PASSES * DATASET
    for s in (a.summary, b.summary):
        assert (s["n_samples_issued"], s["n_samples_completed"]) == (n, n)
        assert s["output_sequence_lengths"]["total"] == n * OUT_TOKENS
    assert b.block["engine"] == "endpoints-reference"
    assert b.endpoints["seed_set"] == "A"


def test_the_reference_client_runs_the_accuracy_pass_from_its_own_yaml(
    tmp_path: Path, client: Path
) -> None:
    # the echo mock answers each prompt's words: rows whose reference is their own
    # prompt match, the others do not, so the client's string_match scores 0.5
    rows = [
        {"prompt": f"row{i} alpha beta", "reference": f"row{i} alpha beta"}
        if i % 2 == 0
        else {"prompt": f"row{i} alpha beta", "reference": "another answer"}
        for i in range(8)
    ]
    acc = tmp_path / "acc.jsonl"
    acc.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tokenizer = word_tokenizer(tmp_path / "tokenizer")
    with MockProcess(MockConfig(mode="echo")) as url:
        request = EndpointsRunRequest(
            sut_options={"url": url, "model": "m"},
            concurrency=[2, 4],
            out_dir=tmp_path / "theirs",
            dataset_size=8,
            seed_set="A",
            partial=True,
            accuracy_file=acc,
            accuracy_metric="exact_match",
            accuracy_at=[4],
        )
        run_reference_points(request, client, tokenizer=str(tokenizer))
    out = tmp_path / "theirs"
    config = (out / "01_c4.yaml").read_text()
    assert 'type: "accuracy"' in config and 'eval_method: "string_match"' in config
    assert not (out / "00_c2" / "accuracy").exists()  # no pass at a level off the N
    doc = json.loads((out / "01_c4" / "accuracy" / "accuracy_results.json").read_text())
    [entry] = doc["accuracy_scores"]
    assert (entry["dataset_name"], entry["dataset_type"]) == ("acc", "accuracy")
    assert (entry["score"], entry["unit_samples"]) == (0.5, 8)
    assert entry["response_counts"]["scored"] == 8
    # the perf phase of the accuracy level issued its pass as the other level did
    points = read_points([out])
    assert [p.summary["n_samples_issued"] for p in points] == [8, 8]
    assert points[1].accuracy is not None and points[0].accuracy is None
