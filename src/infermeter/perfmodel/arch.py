"""Model architectures: a transformer's shape; KV bytes and parameter groups derived."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError
from infermeter.perfmodel.tables import (
    PRECISION_BYTES,
    check_positive,
    lookup,
    not_a_number,
    read_toml,
    read_user,
)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ModelArch:
    """A transformer's shape; KV bytes and parameter groups are derived, not stored."""

    key: str
    name: str
    params_total: float
    params_active: float
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_dim: int
    vocab: int
    experts: int
    experts_per_token: int
    kv_elements_per_layer: int
    native_precision: str
    aliases: tuple[str, ...]
    source: str
    expert_ffn: int = 0
    moe_layers: int = 0
    shared_experts: int = 0
    ffn_matrices: int = 3
    kv_lora_rank: int = 0
    qk_rope_dim: int = 0
    qk_nope_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    sliding_layers: int = 0

    def weight_bytes(self, precision: str) -> float:
        return self.params_total * PRECISION_BYTES[precision]

    def kv_bytes_per_token(self, kv_precision: str) -> float:
        """K and V of every layer for one token (``2 * L * H_kv * d_h * b``; MLA: latent)."""
        return self.layers * self.kv_elements_per_layer * PRECISION_BYTES[kv_precision]

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def params_per_expert(self) -> float:
        return float(self.ffn_matrices * self.d_model * self.expert_ffn)

    @property
    def expert_params(self) -> float:
        """Routed-expert parameters of every MoE layer (0 for a dense model)."""
        if not self.is_moe:
            return 0.0
        return self.moe_layers * self.experts * self.params_per_expert

    @property
    def dense_params(self) -> float:
        """Everything but the routed experts: attention, shared experts, embeddings."""
        return self.params_total - self.expert_params

    @property
    def attention_params(self) -> float:
        """Attention projections of all layers (replicated by data-parallel attention)."""
        d, h = self.d_model, self.heads
        if self.is_mla:
            q = d * 1536 + 1536 * h * (self.qk_nope_dim + self.qk_rope_dim)
            kv = d * (self.kv_lora_rank + self.qk_rope_dim)
            up = self.kv_lora_rank * h * (self.qk_nope_dim + self.v_head_dim)
            per_layer = q + kv + up + h * self.v_head_dim * d
        else:
            per_layer = (
                2 * d * h * self.head_dim + 2 * d * self.kv_heads * self.head_dim
            )
        return float(self.layers * per_layer)

    def attention_flops_per_context(self, decode: bool) -> float:
        """FLOPs one query token spends per context token over all layers (QK and PV).

        MLA decodes in the latent space (absorbed projections: 2 * kv_lora + rope
        per head) and prefills per head (qk_nope + rope + v).
        """
        if self.is_mla:
            width = (
                2 * self.kv_lora_rank + self.qk_rope_dim
                if decode
                else self.qk_nope_dim + self.qk_rope_dim + self.v_head_dim
            )
            return 2.0 * self.layers * self.heads * width
        return 4.0 * self.layers * self.heads * self.head_dim

    def attended_context(self, context: FloatArray) -> FloatArray:
        """Mean context a layer attends to: sliding-window layers cap it."""
        if not self.sliding_layers:
            return context
        capped = np.minimum(context, float(self.sliding_window))
        full = self.layers - self.sliding_layers
        out: FloatArray = (full * context + self.sliding_layers * capped) / self.layers
        return out


_MODEL_INTS = (
    "expert_ffn",
    "shared_experts",
    "ffn_matrices",
    "kv_lora_rank",
    "qk_rope_dim",
    "qk_nope_dim",
    "v_head_dim",
    "sliding_window",
    "sliding_layers",
)


_MODEL_POSITIVE = (
    "params_total",
    "params_active",
    "layers",
    "d_model",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn_dim",
    "vocab",
)


def _model(key: str, d: dict[str, Any]) -> ModelArch:
    try:
        kv_heads, head_dim = int(d["kv_heads"]), int(d["head_dim"])
        lora = int(d.get("kv_lora_rank", 0))
        kv_default = (
            lora + int(d.get("qk_rope_dim", 0)) if lora else 2 * kv_heads * head_dim
        )
        experts = int(d.get("experts", 0))
        extra = {k: int(d[k]) for k in _MODEL_INTS if k in d}
        arch = ModelArch(
            key=key,
            name=str(d.get("name", key)),
            params_total=float(d["params_total"]),
            params_active=float(d.get("params_active", d["params_total"])),
            layers=int(d["layers"]),
            d_model=int(d["d_model"]),
            heads=int(d["heads"]),
            kv_heads=kv_heads,
            head_dim=head_dim,
            ffn_dim=int(d.get("ffn_dim", 4 * int(d["d_model"]))),
            vocab=int(d.get("vocab", 32000)),
            experts=experts,
            experts_per_token=int(d.get("experts_per_token", 0)),
            kv_elements_per_layer=int(d.get("kv_elements_per_layer", kv_default)),
            native_precision=str(d.get("native_precision", "bf16")),
            aliases=tuple(str(a).lower() for a in d.get("aliases", [])),
            source=str(d.get("source", "user file")),
            moe_layers=int(d.get("moe_layers", d["layers"] if experts > 1 else 0)),
            **extra,
        )
    except KeyError as exc:
        raise ConfigError(
            f"Model {key!r} lacks field {exc.args[0]!r}; add it."
        ) from None
    except (TypeError, ValueError) as exc:
        raise not_a_number("Model", key, exc) from None
    check_positive("Model", key, arch, _MODEL_POSITIVE)
    return arch


@lru_cache(maxsize=8)
def _builtin_models() -> dict[str, ModelArch]:
    return {k: _model(k, v) for k, v in read_toml("models.toml").items()}


def models(user_file: Path | None = None) -> dict[str, ModelArch]:
    """Every known model architecture by key; entries of ``user_file`` override."""
    table = dict(_builtin_models())
    table.update({k: _model(k, v) for k, v in read_user(user_file).items()})
    return table


def get_model(name: str, user_file: Path | None = None) -> ModelArch:
    """Look a model up by key or alias; unknown names list the known keys."""
    return lookup(models(user_file), name, "model")
