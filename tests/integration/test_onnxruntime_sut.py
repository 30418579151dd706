"""The onnxruntime SUT: real forward passes under Offline, SingleStream and Server."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from infermeter.clock import MonotonicClock
from infermeter.errors import ConfigError
from infermeter.loadgen.interfaces import QueryBatch
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import Mode, RunSettings, Scenario
from infermeter.suts.onnx_models import materialize_light_model
from infermeter.suts.onnxruntime_sut import OnnxRuntimeSUT
from infermeter.suts.registry import SutContext, create_sut
from infermeter.testing import RecordingSink
from infermeter.workloads import get_benchmark
from infermeter.workloads.datasets import DatasetOptions, build_qsl
from infermeter.workloads.datasets.synthetic import corpus_tokenizer


@pytest.fixture(scope="module")
def shufflenet() -> bytes:
    return materialize_light_model("shufflenet")


@pytest.fixture(scope="module")
def resnet50() -> bytes:
    return materialize_light_model("resnet50")


def _qsl(n: int = 16):
    return build_qsl(get_benchmark("resnet50"), options=DatasetOptions(samples=n))


def _batch(ids: list[int], indices: list[int]) -> QueryBatch:
    return QueryBatch(
        np.asarray(ids, np.int64),
        np.asarray(indices, np.int64),
        np.zeros(len(ids), np.int64),
    )


def test_weights_are_filled_and_batch_is_dynamic(resnet50: bytes) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(resnet50, providers=["CPUExecutionProvider"])
    (inp,) = session.get_inputs()
    assert inp.shape[0] == "N"
    x = np.random.default_rng(0).standard_normal((2, 3, 224, 224), dtype=np.float32)
    for batch in (x, x[:1]):  # a pair, and one image (as SingleStream sends)
        out = session.run(None, {inp.name: batch})[0]
        assert out.shape == (len(batch), 1000)
        # the shipped graph scores every class 0.001; filled weights do not
        assert out.max() > 0.01


def test_direct_batches_complete_with_top5(shufflenet: bytes) -> None:
    qsl = _qsl(8)
    sut = OnnxRuntimeSUT(qsl, shufflenet, max_batch=4)
    sink = RecordingSink()
    try:
        sut.issue_query(_batch([10, 11, 12], [0, 1, 2]), sink)
        sut.issue_query(_batch([13], [7]), sink)
        assert sink.wait(4, timeout_s=30)
    finally:
        sut.close()
    assert not sink.failed
    assert set(sink.completed) == {10, 11, 12, 13}
    top5 = np.frombuffer(sink.completed[13][1], np.float32)
    assert top5.shape == (5,) and len(set(top5.tolist())) == 5
    assert top5.min() >= 0 and top5.max() < 1000


def test_failure_is_reported_not_raised(shufflenet: bytes) -> None:
    qsl = build_qsl(get_benchmark("llama2-70b"), options=DatasetOptions(samples=2))
    sut = OnnxRuntimeSUT(qsl, shufflenet)  # text samples have no image
    sink = RecordingSink()
    try:
        sut.issue_query(_batch([1], [0]), sink)
        assert sink.wait(1, timeout_s=10)
    finally:
        sut.close()
    assert "has no image" in sink.failed[1]


def _settings(scenario: Scenario, **extra: object) -> RunSettings:
    base: dict[str, object] = {
        "scenario": scenario,
        "mode": Mode.PERFORMANCE_ONLY,
        "min_duration_ms": 200,
        "min_query_count": 64,
        "offline_expected_qps": 10.0,
        # a low expected latency pre-generates plenty of queries (closed loop
        # stops once min duration and min queries are met)
        "single_stream_expected_latency_ns": 1_000_000,
        "server_target_qps": 50.0,
        "server_target_latency_ns": 2_000_000_000,
        # p90: early stopping needs 64 queries there, 662 at p99
        "server_target_latency_percentile": 0.9,
    }
    base.update(extra)
    return RunSettings(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "scenario", [Scenario.OFFLINE, Scenario.SINGLE_STREAM, Scenario.SERVER]
)
def test_engine_runs_are_valid(shufflenet: bytes, scenario: Scenario) -> None:
    # SingleStream and Server need 64 queries (p90 early stopping); Offline's one
    # query is valid once it outlasts min duration, which a fast machine's 16
    # images may not do in 200 ms.
    offline = scenario is Scenario.OFFLINE
    n = 16 if offline else 64
    qsl = _qsl(n)
    sut = OnnxRuntimeSUT(qsl, shufflenet, max_batch=8)
    try:
        extra = {"min_duration_ms": 1, "min_query_count": n} if offline else {}
        run = _settings(scenario, **extra)
        outcome = run_test(sut, qsl, run, clock=MonotonicClock())
    finally:
        sut.close()
    assert outcome.summary is not None
    assert outcome.valid, outcome.summary
    perf = outcome.performance
    assert perf is not None
    assert int((perf.records.completed_ns >= 0).sum()) >= n


def test_registered_factory_builds_default_resnet50(
    resnet50: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infermeter.suts import onnx_models

    asked: list[tuple[str, int]] = []

    def built_once(name: str = "resnet50", *, seed: int = 0) -> bytes:
        asked.append((name, seed))  # the module's graph: the same bytes, built once
        return resnet50

    monkeypatch.setattr(onnx_models, "materialize_light_model", built_once)
    qsl = _qsl(4)
    context = SutContext(
        qsl=qsl,
        clock=MonotonicClock(),
        scenario=Scenario.OFFLINE,
        benchmark="resnet50",
        options={"batch": "2"},
    )
    sut = create_sut("onnxruntime", context)
    try:
        assert isinstance(sut, OnnxRuntimeSUT)
        assert sut.pool.max_batch == 2
    finally:
        sut.close()
    assert asked == [("resnet50", 0)]


@pytest.mark.slow
def test_resnet50_runs_are_valid(resnet50: bytes) -> None:
    """The full-size graph through the engine in batches of 8: Offline, 16 images.

    Every scenario's path is run above with shufflenet, and a one-image batch of
    resnet50 in the weights test: more images here only add forward passes."""
    qsl = _qsl(16)
    sut = OnnxRuntimeSUT(qsl, resnet50, max_batch=8)
    try:
        # Valid once its one query outlasts min duration; a fast machine can
        # finish 16 images in well under 200 ms.
        run = _settings(Scenario.OFFLINE, min_duration_ms=1, min_query_count=16)
        outcome = run_test(sut, qsl, run, clock=MonotonicClock())
    finally:
        sut.close()
    assert outcome.valid, outcome.summary
    perf = outcome.performance
    assert perf is not None
    assert int((perf.records.completed_ns >= 0).sum()) == 16


def _tiny_bert_qa(seq: int = 64, vocab: int = 50_000, width: int = 8) -> bytes:
    """A BERT-shaped QA graph: embeddings -> one projection -> start/end logits."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    embed = numpy_helper.from_array(
        rng.standard_normal((vocab, width)).astype(np.float32), "embed"
    )
    head = numpy_helper.from_array(
        rng.standard_normal((width, 2)).astype(np.float32), "head"
    )
    split = numpy_helper.from_array(np.asarray([1, 1], np.int64), "split")
    axis = numpy_helper.from_array(np.asarray([2], np.int64), "axis")
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["h"]),
        helper.make_node("MatMul", ["h", "head"], ["logits"]),
        helper.make_node("Split", ["logits", "split"], ["s", "e"], axis=2),
        helper.make_node("Squeeze", ["s", "axis"], ["start_logits"]),
        helper.make_node("Squeeze", ["e", "axis"], ["end_logits"]),
    ]
    ids = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", seq])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", seq])
        for name in ("start_logits", "end_logits")
    ]
    graph = helper.make_graph(
        nodes, "tiny_bert_qa", ids, outs, [embed, head, split, axis]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return bytes(model.SerializeToString())


def test_bert_style_inputs_answer_with_a_span_of_the_context() -> None:
    qsl = build_qsl(get_benchmark("bert"), options=DatasetOptions(samples=8))
    qsl.load_samples(np.arange(8, dtype=np.int64))
    sut = OnnxRuntimeSUT(qsl, _tiny_bert_qa(), max_batch=4)
    sink = RecordingSink()
    try:
        sut.issue_query(_batch(list(range(8)), list(range(8))), sink)
        assert sink.wait(8)
    finally:
        sut.close()
    assert not sink.failed
    tokenizer = qsl.tokenizer or corpus_tokenizer()
    for i in range(8):
        _, answer = sink.completed[i]
        assert answer
        context = " ".join(
            tokenizer.decode(qsl.sample(i).input_ids[:64].tolist()).split()
        )
        assert " ".join(answer.decode().split()) in context


def test_cuda_without_a_cuda_provider_is_a_one_line_error(shufflenet: bytes) -> None:
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has CUDA")
    with pytest.raises(ConfigError, match="no CUDAExecutionProvider"):
        OnnxRuntimeSUT(_qsl(4), shufflenet, device="cuda")
