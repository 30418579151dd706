"""A local causal-LM SUT in torch: batched greedy generation that streams first tokens.

Each batch is left-padded and prefilled at once; the first token of every
sample goes to ``sink.first_token`` right after prefill, then decode steps run
until each sample has its target length (``output_tokens`` of the dataset,
capped by ``max_tokens``) and it completes with ``n_tokens`` and its token ids
(int32). EOS is masked so every sample reaches its length (performance runs
ignore EOS, as serving benchmarks do). Static batches, no continuous batching.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from infermeter.workloads.datasets.base import DatasetQSL, Sample
from infermeter.workloads.datasets.synthetic import corpus_tokenizer

try:
    import torch

    from infermeter.suts.llama_model import (
        LlamaConfig,
        LlamaForCausalLM,
        load_model,
        random_model,
    )
except ImportError:  # the torch extra is optional
    torch = None  # type: ignore[assignment]

MIN_TOKENS = 2  # LoadGen rejects n_tokens <= 1 on token runs
OnFirst = Callable[[list[int]], None]
OnDone = Callable[[int, list[int]], None]


def generate(
    model: LlamaForCausalLM,
    prompts: Sequence[Sequence[int]],
    new_tokens: Sequence[int],
    *,
    on_first: OnFirst,
    on_done: OnDone,
    banned: int | None = None,
) -> None:
    """Greedy decoding of a left-padded batch, reporting first tokens and completions."""
    device = next(model.parameters()).device
    width = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), width), dtype=torch.long, device=device)
    keys = torch.zeros((len(prompts), width), dtype=torch.bool, device=device)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.as_tensor(list(prompt), device=device)
        keys[row, width - len(prompt) :] = True
    positions = (keys.long().cumsum(1) - 1).clamp(min=0)
    causal = torch.tril(torch.ones(width, width, dtype=torch.bool, device=device))
    eye = torch.eye(width, dtype=torch.bool, device=device)
    mask = (causal & keys[:, None, :]) | eye  # a pad row attends to itself, never NaN
    with torch.inference_mode():
        logits, caches = model(ids, positions, mask[:, None])
        token = _pick(logits, banned)
        outputs = [[t] for t in token.tolist()]
        on_first([o[0] for o in outputs])
        _finish(outputs, new_tokens, 1, on_done)
        last = positions[:, -1]
        for step in range(1, max(new_tokens)):
            keys = torch.cat((keys, torch.ones_like(keys[:, :1])), dim=1)
            logits, caches = model(
                token[:, None], (last + step)[:, None], keys[:, None, None, :], caches
            )
            token = _pick(logits, banned)
            for row, value in enumerate(token.tolist()):
                if len(outputs[row]) < new_tokens[row]:
                    outputs[row].append(value)
            _finish(outputs, new_tokens, step + 1, on_done)


def _pick(logits: Any, banned: int | None) -> Any:
    scores = logits[:, -1].float()
    if banned is not None and banned < scores.shape[-1]:
        scores[:, banned] = float("-inf")
    return scores.argmax(-1)


def _finish(
    outputs: list[list[int]], targets: Sequence[int], length: int, on_done: OnDone
) -> None:
    for row, target in enumerate(targets):
        if target == length:
            on_done(row, outputs[row])


class TorchLlmSUT(PooledSUT):
    """Batched local generation with streamed first tokens; CPU, or CUDA when asked."""

    name = "TorchLlmSUT"

    def __init__(
        self,
        qsl: DatasetQSL,
        model: LlamaForCausalLM,
        *,
        max_batch: int = 4,
        max_tokens: int = 32,
        default_tokens: int = 16,
    ) -> None:
        self.qsl = qsl
        self.model = model
        self.max_tokens = max(MIN_TOKENS, max_tokens)
        self.default_tokens = default_tokens
        self.tokenizer = qsl.tokenizer or corpus_tokenizer()
        self.pool = BatchingPool(
            self._run, max_batch=max_batch, workers=1, name="torch-llm"
        )

    def _run(self, ids: IdArray, indices: IndexArray, sink: CompletionSink) -> None:
        samples = [self.qsl.sample(i) for i in indices.tolist()]
        targets = [self._target(s) for s in samples]
        room = self.model.config.max_position_embeddings - max(targets)
        prompts = [self._prompt(s)[-room:] for s in samples]

        def first(tokens: list[int]) -> None:
            sink.first_token(ids, [_bytes([t]) for t in tokens])

        def done(row: int, tokens: list[int]) -> None:
            sink.complete(
                ids[row : row + 1], n_tokens=len(tokens), data=[_bytes(tokens)]
            )

        generate(
            self.model,
            prompts,
            targets,
            on_first=first,
            on_done=done,
            banned=self.tokenizer.eos_id,
        )

    def _target(self, sample: Sample) -> int:
        wanted = sample.output_tokens or self.default_tokens
        return int(max(MIN_TOKENS, min(wanted, self.max_tokens)))

    def _prompt(self, sample: Sample) -> list[int]:
        vocab = self.model.config.vocab_size
        if sample.input_ids is not None:
            tokens = sample.input_ids.tolist()
        else:
            tokens = self.tokenizer.encode(sample.prompt or "")
        return [t % vocab for t in tokens] or [0]


def _bytes(tokens: list[int]) -> bytes:
    return np.asarray(tokens, dtype=np.int32).tobytes()


def _device(choice: str) -> str:
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda but torch sees no CUDA device; use device=cpu.")
    return choice


@register("torch_llm")
def create(context: SutContext) -> TorchLlmSUT:
    """``--sut torch_llm``; options: model=DIR, layers, hidden, heads, batch, max_tokens."""
    if torch is None:
        raise MissingDependencyError("torch", "torch")
    qsl = context.qsl
    if not isinstance(qsl, DatasetQSL):
        raise ConfigError("The torch_llm SUT needs an infermeter dataset (DatasetQSL).")
    device = _device(context.option("device", "auto"))
    num = context.float_option
    directory = context.option("model", "")
    if directory:
        model = load_model(directory, device=device)
    else:
        tokenizer = qsl.tokenizer or corpus_tokenizer()
        heads = int(num("heads", 4))
        cfg = LlamaConfig(
            vocab_size=int(num("vocab", tokenizer.vocab_size)),
            hidden_size=int(num("hidden", 128)),
            intermediate_size=int(num("intermediate", 344)),
            num_hidden_layers=int(num("layers", 2)),
            num_attention_heads=heads,
            num_key_value_heads=int(num("kv_heads", max(1, heads // 2))),
        )
        model = random_model(cfg, seed=int(num("seed", 0)), device=device)
    offline = context.scenario.value == "Offline"
    return TorchLlmSUT(
        qsl,
        model,
        max_batch=int(num("batch", 8 if offline else 4)),
        max_tokens=int(num("max_tokens", 32)),
    )
