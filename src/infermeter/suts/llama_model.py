"""A Llama-style causal LM in plain torch: RMSNorm, rotary positions, GQA, SwiGLU, KV cache.

Parameter names follow the Hugging Face Llama layout (``model.layers.N.self_attn
.q_proj.weight``...), so a local checkpoint loads with ``load_state_dict``.
Random weights of the right shapes stand in when none are given (like vLLM's
``--load-format dummy``): real compute, meaningless text.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from infermeter.errors import ConfigError

KV = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True, slots=True)
class LlamaConfig:
    """Shapes of the model (Hugging Face ``config.json`` names)."""

    vocab_size: int = 512
    hidden_size: int = 128
    intermediate_size: int = 344
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0

    @classmethod
    def from_json(cls, path: Path) -> LlamaConfig:
        """Read the known keys of a Hugging Face ``config.json``."""
        raw = json.loads(path.read_text(encoding="utf-8"))
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * scale * self.weight


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d, h, kv = cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads
        self.q_proj = nn.Linear(cfg.hidden_size, h * d, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, kv * d, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, kv * d, bias=False)
        self.o_proj = nn.Linear(h * d, cfg.hidden_size, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        mask: torch.Tensor,
        cache: KV | None,
    ) -> tuple[torch.Tensor, KV]:
        b, t, _ = x.shape
        cfg = self.cfg
        q = (
            self.q_proj(x)
            .view(b, t, cfg.num_attention_heads, cfg.head_dim)
            .transpose(1, 2)
        )
        k = (
            self.k_proj(x)
            .view(b, t, cfg.num_key_value_heads, cfg.head_dim)
            .transpose(1, 2)
        )
        v = (
            self.v_proj(x)
            .view(b, t, cfg.num_key_value_heads, cfg.head_dim)
            .transpose(1, 2)
        )
        q, k = _rotate(q, *rope), _rotate(k, *rope)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
        groups = cfg.num_attention_heads // cfg.num_key_value_heads
        out = F.scaled_dot_product_attention(
            q,
            k.repeat_interleave(groups, 1),
            v.repeat_interleave(groups, 1),
            attn_mask=mask,
        )
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1)), (k, v)


class MLP(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return out


class DecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        mask: torch.Tensor,
        cache: KV | None,
    ) -> tuple[torch.Tensor, KV]:
        attn, new_cache = self.self_attn(self.input_layernorm(x), rope, mask, cache)
        x = x + attn
        return x + self.mlp(self.post_attention_layernorm(x)), new_cache


class Backbone(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(
            DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers)
        )
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LlamaForCausalLM(nn.Module):
    """Logits for the next token; ``forward`` takes and returns the KV cache."""

    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = Backbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        inv = 1.0 / cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2) / cfg.head_dim)
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(
        self,
        ids: torch.Tensor,
        positions: torch.Tensor,
        mask: torch.Tensor,
        caches: list[KV] | None = None,
    ) -> tuple[torch.Tensor, list[KV]]:
        """``ids``/``positions`` [B, T]; ``mask`` bool [B, 1, T, T_total] (True = attend)."""
        freqs = positions[..., None].float() * self.inv_freq  # type: ignore[operator]
        emb = torch.cat((freqs, freqs), dim=-1)[:, None]
        rope = (emb.cos(), emb.sin())
        x = self.model.embed_tokens(ids)
        new: list[KV] = []
        for i, layer in enumerate(self.model.layers):
            x, kv = layer(x, rope, mask, None if caches is None else caches[i])
            new.append(kv)
        return self.lm_head(self.model.norm(x[:, -1:])), new


def random_model(
    cfg: LlamaConfig, *, seed: int = 0, device: str = "cpu"
) -> LlamaForCausalLM:
    """A model of ``cfg``'s shapes with seeded N(0, 1/sqrt(fan_in)) weights."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() == 2:
                param.normal_(0.0, 1.0 / math.sqrt(param.shape[1]))
            elif "norm" not in name:
                param.zero_()
    return model.to(device).eval()


def load_model(directory: str | Path, *, device: str = "cpu") -> LlamaForCausalLM:
    """A Llama checkpoint from a local directory (config.json + weights file)."""
    directory = Path(directory)
    config = directory / "config.json"
    if not config.is_file():
        raise ConfigError(
            f"No config.json in {str(directory)!r}; pass a Llama model directory."
        )
    model = LlamaForCausalLM(LlamaConfig.from_json(config))
    state = _read_weights(directory)
    if "lm_head.weight" not in state and "model.embed_tokens.weight" in state:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]  # tied embeddings
    missing, _unexpected = model.load_state_dict(state, strict=False)
    if missing:
        raise ConfigError(
            f"Checkpoint in {str(directory)!r} lacks {len(missing)} weight(s), e.g. "
            f"{missing[0]!r}: not a Llama-layout model."
        )
    return model.to(device).eval()


def _read_weights(directory: Path) -> dict[str, Any]:
    bins = sorted(directory.glob("pytorch_model*.bin"))
    tensors = sorted(directory.glob("*.safetensors"))
    state: dict[str, Any] = {}
    if tensors:
        try:
            load_file = importlib.import_module("safetensors.torch").load_file
        except ImportError:
            raise ConfigError(
                "The checkpoint is in safetensors format; pip install safetensors."
            ) from None
        for path in tensors:
            state.update(load_file(str(path)))
    for path in bins:
        state.update(torch.load(path, map_location="cpu", weights_only=True))
    if not state:
        raise ConfigError(
            f"No pytorch_model*.bin or *.safetensors weights in {str(directory)!r}."
        )
    return state
