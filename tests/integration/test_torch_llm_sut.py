"""The torch_llm SUT: a random-weight Llama-style model generating on CPU."""

from __future__ import annotations

import numpy as np
import pytest

from infermeter.clock import MonotonicClock
from infermeter.loadgen.interfaces import QueryBatch
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import Mode, RunSettings, Scenario
from infermeter.suts.registry import SutContext, create_sut
from infermeter.suts.torch_llm import TorchLlmSUT, generate
from infermeter.testing import RecordingSink
from infermeter.workloads import get_benchmark
from infermeter.workloads.datasets import DatasetOptions, build_qsl, parse_length
from infermeter.workloads.datasets.synthetic import corpus_tokenizer

torch = pytest.importorskip("torch")
from infermeter.suts.llama_model import LlamaConfig, load_model, random_model  # noqa: E402

VOCAB = corpus_tokenizer().vocab_size


@pytest.fixture(scope="module")
def model():
    return random_model(LlamaConfig(vocab_size=VOCAB), seed=0)


def _run(model, prompts, targets):
    firsts: list[list[int]] = []
    done: dict[int, list[int]] = {}
    generate(
        model,
        prompts,
        targets,
        on_first=firsts.append,
        on_done=lambda row, toks: done.__setitem__(row, list(toks)),
        banned=1,
    )
    return firsts, done


def test_padded_batch_generates_what_each_prompt_does_alone(model) -> None:
    prompts = [[5, 6, 7, 8, 9, 10], [3, 4]]
    firsts, batched = _run(model, prompts, [4, 6])
    assert [len(batched[0]), len(batched[1])] == [4, 6]
    assert firsts == [[batched[0][0], batched[1][0]]]
    for row, prompt in enumerate(prompts):
        _, alone = _run(model, [prompt], [len(batched[row])])
        assert alone[0] == batched[row]
    assert all(1 not in toks for toks in batched.values())  # EOS masked


def _qsl(n: int, out: str = "fixed:6"):
    opts = DatasetOptions(
        samples=n, input_len=parse_length("uniform:8:24"), output_len=parse_length(out)
    )
    return build_qsl(get_benchmark("llama2-70b"), options=opts)


def test_sut_streams_first_tokens_and_completes(model) -> None:
    qsl = _qsl(4, "uniform:3:8")
    sut = TorchLlmSUT(qsl, model, max_batch=4)
    sink = RecordingSink()
    ids = np.asarray([20, 21, 22, 23], np.int64)
    try:
        sut.issue_query(
            QueryBatch(ids, np.arange(4, dtype=np.int64), np.zeros(4, np.int64)), sink
        )
        assert sink.wait(4, timeout_s=60)
    finally:
        sut.close()
    for k, sample_id in enumerate(ids.tolist()):
        n_tokens, data = sink.completed[sample_id]
        tokens = np.frombuffer(data, np.int32)
        assert n_tokens == len(tokens) == qsl.sample(k).output_tokens
        first = np.frombuffer(sink.first_tokens[sample_id], np.int32)
        assert first[0] == tokens[0]


def test_max_tokens_caps_and_minimum_is_two(model) -> None:
    qsl = _qsl(2, "fixed:50")
    sut = TorchLlmSUT(qsl, model, max_tokens=5)
    assert sut._target(qsl.sample(0)) == 5
    sut.max_tokens = 1
    assert sut._target(qsl.sample(0)) == 2
    sut.close()


def _token_settings(scenario: Scenario) -> RunSettings:
    return RunSettings(
        scenario=scenario,
        mode=Mode.PERFORMANCE_ONLY,
        # Offline: 0 so the single query (64 samples) alone makes the run
        min_duration_ms=0 if scenario is Scenario.OFFLINE else 200,
        min_query_count=64,
        offline_expected_qps=10.0,
        server_target_qps=40.0,
        server_target_latency_ns=0,
        server_target_latency_percentile=0.9,
        use_token_latencies=True,
        ttft_latency=5_000_000_000,
        tpot_latency=1_000_000_000,
    )


@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SERVER])
def test_token_runs_are_valid_with_ttft_and_tpot(scenario: Scenario) -> None:
    qsl = _qsl(64)
    context = SutContext(
        qsl=qsl,
        clock=MonotonicClock(),
        scenario=scenario,
        benchmark="llama2-70b",
        token_run=True,
        options={"device": "cpu", "layers": "1", "hidden": "64"},
    )
    sut = create_sut("torch_llm", context)
    try:
        outcome = run_test(sut, qsl, _token_settings(scenario), clock=MonotonicClock())
    finally:
        sut.close()
    summary = outcome.summary
    assert summary is not None
    assert outcome.valid, summary.reasons
    assert summary.token_count == 6 * summary.sample_count
    if scenario is Scenario.SERVER:
        assert summary.ttft is not None and summary.tpot is not None
        assert summary.ttft.max > 0 and summary.tpot.max > 0


def test_load_model_from_directory(tmp_path, model) -> None:
    import json

    cfg = model.config
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "vocab_size": cfg.vocab_size,
                "hidden_size": cfg.hidden_size,
                "intermediate_size": cfg.intermediate_size,
                "num_hidden_layers": cfg.num_hidden_layers,
                "num_attention_heads": cfg.num_attention_heads,
                "num_key_value_heads": cfg.num_key_value_heads,
                "model_type": "llama",
            }
        )
    )
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    loaded = load_model(tmp_path)
    _, a = _run(model, [[4, 5, 6]], [5])
    _, b = _run(loaded, [[4, 5, 6]], [5])
    assert a == b


def test_load_model_errors(tmp_path) -> None:
    from infermeter.errors import ConfigError

    with pytest.raises(ConfigError, match=r"No config\.json"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="No pytorch_model"):
        load_model(tmp_path)
