"""A SUT running any ONNX model with onnxruntime: vision (NCHW images) or BERT-style inputs.

Default model: ResNet-50 from the ``onnx`` package's test data with seeded
random weights (see ``onnx_models``): real compute, meaningless predictions.
Vision responses are the top-5 class indices as float32 (top-1 first, the
layout MLPerf's ImageNet script reads); BERT responses are the answer text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import ConfigError, MissingDependencyError
from infermeter.loadgen.interfaces import (
    CompletionSink,
    IdArray,
    IndexArray,
)
from infermeter.suts.batching import BatchingPool, PooledSUT
from infermeter.suts.registry import SutContext, register
from infermeter.workloads.datasets.base import DatasetQSL

BERT_NAMES = {
    "ids": ("input_ids",),
    "mask": ("attention_mask", "input_mask"),
    "segments": ("token_type_ids", "segment_ids"),
}
DEFAULT_SEQ_LEN = 384


def _session(model: bytes | str | Path, threads: int, device: str) -> Any:
    try:
        import onnxruntime as ort
    except ImportError:
        raise MissingDependencyError("onnxruntime", "onnx") from None
    options = ort.SessionOptions()
    options.log_severity_level = 3  # unused-initializer warnings are noise here
    if threads:
        options.intra_op_num_threads = threads
    providers = ["CPUExecutionProvider"]
    if device == "cuda":
        available = ort.get_available_providers()
        if "CUDAExecutionProvider" not in available:
            # Never label a CPU run as a GPU one.
            raise ConfigError(
                "device=cuda but this onnxruntime has no CUDAExecutionProvider "
                f"(available: {', '.join(available)}); install onnxruntime-gpu "
                "or use --sut-opt device=cpu"
            )
        providers.insert(0, "CUDAExecutionProvider")
    source = model if isinstance(model, bytes) else str(model)
    try:
        return ort.InferenceSession(source, options, providers=providers)
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
        raise ConfigError(
            f"Cannot load ONNX model: {str(exc).splitlines()[0]}"
        ) from None


class OnnxRuntimeSUT(PooledSUT):
    """Batched onnxruntime inference on worker threads, completing through the sink."""

    name = "OnnxRuntimeSUT"

    def __init__(
        self,
        qsl: DatasetQSL,
        model: bytes | str | Path,
        *,
        max_batch: int = 8,
        workers: int = 1,
        threads: int = 0,
        device: str = "cpu",
    ) -> None:
        self.qsl = qsl
        self.session = _session(model, threads, device)
        # The provider that actually runs the graph names the SUT in run.json.
        provider = self.session.get_providers()[0].removesuffix("ExecutionProvider")
        self.name = f"OnnxRuntimeSUT ({provider})"
        inputs = self.session.get_inputs()
        self._bert = _bert_inputs([i.name for i in inputs])
        self._input = inputs[0].name
        seq = inputs[0].shape[1] if len(inputs[0].shape) > 1 else None
        self._seq_len = seq if isinstance(seq, int) else DEFAULT_SEQ_LEN
        self.pool = BatchingPool(
            self._run, max_batch=max_batch, workers=workers, name="onnxruntime"
        )

    def _run(self, ids: IdArray, indices: IndexArray, sink: CompletionSink) -> None:
        samples = [self.qsl.sample(i) for i in indices.tolist()]
        if self._bert is not None:
            feeds = self._bert_feeds(samples)
            start, end = self.session.run(None, feeds)[:2]
            data = [
                self._answer(s.input_ids, a, b)
                for s, a, b in zip(samples, start, end, strict=True)
            ]
        else:
            images = np.stack([_image(s.image, s.index) for s in samples])
            scores = self.session.run(None, {self._input: images})[0]
            top5 = np.argsort(-scores.reshape(len(samples), -1), axis=1)[:, :5]
            data = [row.astype(np.float32).tobytes() for row in top5]
        sink.complete(ids, data=data)

    def _bert_feeds(self, samples: list[Any]) -> dict[str, Any]:
        assert self._bert is not None
        n, seq = len(samples), self._seq_len
        ids = np.zeros((n, seq), np.int64)
        for row, sample in enumerate(samples):
            tokens = sample.input_ids if sample.input_ids is not None else np.zeros(1)
            ids[row, : min(seq, len(tokens))] = tokens[:seq]
        mask = (ids != 0).astype(np.int64)
        values = {"ids": ids, "mask": mask, "segments": np.zeros_like(ids)}
        return {name: values[role] for role, name in self._bert.items()}

    def _answer(self, input_ids: Any, start: Any, end: Any) -> bytes:
        # best span with start <= end < start + 30 (SQuAD's max answer length)
        first = int(np.argmax(start))
        last = first + int(np.argmax(end[first : first + 30]))
        tokens = [] if input_ids is None else input_ids[first : last + 1].tolist()
        tokenizer = self.qsl.tokenizer or _corpus_tokenizer()
        return tokenizer.decode(tokens).encode("utf-8")


def _corpus_tokenizer() -> Any:
    from infermeter.workloads.datasets.synthetic import corpus_tokenizer

    return corpus_tokenizer()


def _image(image: Any, index: int) -> Any:
    if image is None:
        raise ConfigError(
            f"Sample {index} has no image; the onnxruntime vision SUT needs an image "
            "dataset (e.g. --benchmark resnet50)."
        )
    return image


def _bert_inputs(names: list[str]) -> dict[str, str] | None:
    found = {}
    for role, candidates in BERT_NAMES.items():
        match = next((n for n in names if n in candidates), None)
        if match is not None:
            found[role] = match
    return found if "ids" in found else None


@register("onnxruntime")
def create(context: SutContext) -> OnnxRuntimeSUT:
    """``--sut onnxruntime``: options model, batch, workers, threads, device, seed."""
    qsl = context.qsl
    if not isinstance(qsl, DatasetQSL):
        raise ConfigError(
            "The onnxruntime SUT needs an infermeter dataset (DatasetQSL)."
        )
    model_opt = context.option("model", "resnet50")
    model: bytes | str = model_opt
    if not model_opt.endswith(".onnx"):
        from infermeter.suts.onnx_models import materialize_light_model

        model = materialize_light_model(
            model_opt, seed=int(context.float_option("seed", 0))
        )
    offline = context.scenario.value == "Offline"
    return OnnxRuntimeSUT(
        qsl,
        model,
        max_batch=int(context.float_option("batch", 8 if offline else 4)),
        workers=int(context.float_option("workers", 1)),
        threads=int(context.float_option("threads", 0)),
        device=context.option("device", "cpu"),
    )
