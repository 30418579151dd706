"""Step-time roofline (spec performance-model.md section 3.1) with efficiency coefficients.

A step of continuous batching runs ``decode`` sequences one token each plus a
number of prefill tokens on one replica of ``tp`` accelerators; per operator group its
time is FLOPs over derated peak against bytes over derated bandwidth, the larger
of the two softened near the ridge (``ridge``), plus the replica's collectives
and a fixed per-step overhead.

How a replica spreads a model over its accelerators:

- dense models: tensor parallel inside the scale-up domain (NVLink, Infinity
  Fabric), pipeline stages across domains (each micro-batch re-reads its
  stage's weights, so weight traffic grows with the stage count);
- mixture-of-experts with ``ep=True``: data-parallel attention (each accelerator
  holds its sequences' KV cache and a copy of the non-expert weights) and
  expert parallelism (the routed experts spread over the replica, tokens sent
  to their experts and back by all-to-all). Multi-head latent attention has one
  KV head, so tensor parallelism would copy its cache to every rank: MLA models
  use expert parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError
from infermeter.perfmodel.specs import (
    PRECISION_BYTES,
    WEIGHT_ONLY_MATH,
    Accelerator,
    ModelArch,
    runs_weight_only,
)

FloatArray = npt.NDArray[np.float64]
ACT_BYTES = 2.0  # activations cross the all-reduce in 16-bit
DISPATCH_BYTES = 1.0  # MoE dispatch sends FP8 activations, combine returns 16-bit
MOE_DENSE_PRECISION = "fp8"  # FP4 MoE checkpoints keep attention and shared weights FP8
# Activation vectors (d_model wide, 16-bit) each token writes or reads outside the
# GEMMs per layer: two fused residual-add + RMSNorm (read input and residual, write
# both: 4 each), the QKV output written and read by attention (2), the attention
# output written and read by the output projection (2). A count, not a fit; the
# FFN intermediate is left out because serving stacks fuse SwiGLU with the
# quantisation of its output.
ACT_VECTORS_PER_LAYER = 12.0
# Kernels overlap their math with their memory traffic imperfectly near the ridge
# point: an operator group's time is the p-norm of its compute and memory times
# (p -> infinity is the hard roofline, p = 1 no overlap). Chosen with the TPOT
# headroom and spread it trades against, where the fit's own loss over the
# published rows is least (docs/notes/perfmodel-validation.md, "Continuous batch under the TPOT
# bound"); the hard roofline fits them worst of the values tried.
RIDGE_P = 1.1


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Achievable fractions of peak and fixed costs; one set per (SKU, stack, precision).

    The defaults are the uncalibrated values: ``memory`` 0.9 and the all-reduce
    and step costs put batch-1 Llama 2 70B FP16 decode at 79/121 tok/s on H100
    TP4/TP8 and 153 tok/s on H200 TP8 (docs/notes/perfmodel-validation.md). ``server`` derates
    the Server/Interactive throughput relative to the TPOT-bound steady state.
    ``launch_per_layer_s`` is the kernel-launch cost per layer of a step that
    mixes prefill with decode (no CUDA graph): a first-principles estimate, not
    fitted.
    """

    compute: float = 0.6
    memory: float = 0.9
    allreduce_hop_s: float = 1.0e-6
    step_overhead_s: float = 3.0e-4
    server: float = 1.0
    launch_per_layer_s: float = 75.0e-6

    def scaled(self, speed: float) -> Efficiency:
        """Compute and memory efficiency times ``speed`` (a calibrated factor)."""
        return replace(self, compute=self.compute * speed, memory=self.memory * speed)


@dataclass(frozen=True, slots=True)
class Deployment:
    """One model replica: accelerator, accelerators per replica (``tp``) and precision.

    ``tp`` is the replica's size: tensor parallel up to the scale-up domain
    (``domain``, default the part's), pipeline stages beyond it; with ``ep`` a
    mixture-of-experts replica runs expert parallel with data-parallel attention.
    """

    accelerator: Accelerator
    model: ModelArch
    precision: str
    tp: int = 1
    kv_precision: str = ""
    memory_reserve: float = 0.1
    max_batch: int = 1024
    ep: bool = False
    domain: int = 0
    _kv: str = field(init=False, repr=False, default="")
    _rates: _Rates | None = field(init=False, repr=False, default=None, compare=False)

    def __post_init__(self) -> None:
        if self.precision not in PRECISION_BYTES:
            known = ", ".join(PRECISION_BYTES)
            raise ConfigError(f"Unknown precision {self.precision!r}. Known: {known}.")
        if self.tp < 1:
            raise ConfigError(f"Tensor-parallel size must be >= 1 (got {self.tp}).")
        if not self.weight_only:
            self.accelerator.peak_flops(self.precision)  # raises if unsupported
        kv = self.kv_precision or (
            "fp8"
            if PRECISION_BYTES[self.precision] <= 1 and self.accelerator.supports("fp8")
            else "fp16"
        )
        object.__setattr__(self, "_kv", kv)
        if self.ep and not self.model.is_moe:
            raise ConfigError(f"{self.model.name} has no experts to spread (ep).")

    @property
    def rates(self) -> _Rates:
        """Per-step constants of this replica, computed once (the simulators call
        ``step_time_s`` for every step)."""
        if self._rates is None:
            object.__setattr__(self, "_rates", _Rates.of(self))
        assert self._rates is not None
        return self._rates

    # -- shape of the replica --------------------------------------------------
    @property
    def scaleup(self) -> int:
        """Accelerators of the replica sharing one scale-up domain."""
        domain = self.domain or self.accelerator.scaleup_domain
        return max(1, min(self.tp, domain))

    @property
    def stages(self) -> int:
        """Pipeline stages (dense) or scale-up domains spanned (expert parallel)."""
        return max(1, -(-self.tp // self.scaleup))

    @property
    def kv_copies(self) -> float:
        """How many times tensor parallelism stores each KV head (heads < ranks)."""
        if self.ep:
            return 1.0
        return max(1.0, self.scaleup / max(1, self.model.kv_heads))

    # -- memory ----------------------------------------------------------------
    @property
    def kv_bytes_per_token(self) -> float:
        return self.model.kv_bytes_per_token(self._kv)

    @property
    def weight_only(self) -> bool:
        """FP4 experts the part cannot multiply in FP4 (``runs_weight_only``)."""
        return runs_weight_only(self.accelerator, self.model, self.precision)

    @property
    def expert_precision(self) -> str:
        return self.precision

    @property
    def expert_math(self) -> str:
        """The format the routed experts multiply in."""
        return WEIGHT_ONLY_MATH if self.weight_only else self.expert_precision

    @property
    def dense_precision(self) -> str:
        """Non-expert weights of an FP4 MoE stay FP8 where the part has FP8 (else
        16-bit where the experts run weight-only)."""
        fp4_moe = self.model.is_moe and self.precision == "fp4"
        if fp4_moe and self.accelerator.supports(MOE_DENSE_PRECISION):
            return MOE_DENSE_PRECISION
        return WEIGHT_ONLY_MATH if self.weight_only else self.precision

    @property
    def weight_bytes(self) -> float:
        """Weights of one copy of the model."""
        m = self.model
        return m.expert_params * PRECISION_BYTES[self.expert_precision] + (
            m.dense_params * PRECISION_BYTES[self.dense_precision]
        )

    @property
    def resident_weight_bytes(self) -> float:
        """Weights held by the whole replica (expert parallelism copies the rest)."""
        if not self.ep:
            return self.weight_bytes
        dense = self.model.dense_params * PRECISION_BYTES[self.dense_precision]
        return self.weight_bytes + (self.tp - 1) * dense

    @property
    def free_bytes(self) -> float:
        """HBM left for KV cache across the replica after weights and the reserve."""
        usable = self.tp * self.accelerator.memory_bytes * (1.0 - self.memory_reserve)
        return usable - self.resident_weight_bytes

    def kv_capacity_tokens(self) -> int:
        per_token = self.kv_bytes_per_token * self.kv_copies
        return max(0, int(self.free_bytes / per_token))

    def check_fits(self, tokens_per_sequence: float = 0.0) -> None:
        """ConfigError with the numbers when weights (plus one sequence) do not fit."""
        kv = tokens_per_sequence * self.kv_bytes_per_token * self.kv_copies
        need = self.resident_weight_bytes + kv
        have = self.tp * self.accelerator.memory_bytes * (1.0 - self.memory_reserve)
        if need > have:
            raise ConfigError(
                f"{self.model.name} at {self.precision.upper()} needs "
                f"{need / 1e9:.1f} GB (weights {self.resident_weight_bytes / 1e9:.1f} GB)"
                f" but TP{self.tp} x {self.accelerator.name} offers {have / 1e9:.1f} GB "
                f"usable; raise the TP size or lower the precision."
            )

    def with_tp(self, tp: int) -> Deployment:
        return replace(self, tp=tp)

    @property
    def attention_precision(self) -> str:
        """Attention math runs in FP8 where the cache is FP8 and the part has FP8."""
        return (
            "fp8" if self._kv == "fp8" and self.accelerator.supports("fp8") else "bf16"
        )


@dataclass(frozen=True, slots=True)
class _Rates:
    """Seconds per unit of work at 100 % efficiency, per accelerator of a replica."""

    gemm_per_token: float  # dense layers and shared experts
    routed_per_token: float  # routed experts
    attn_per_decode_ctx: float
    attn_per_prefill_ctx: float
    kv_per_ctx: float  # bytes per decode token per context token
    dense_read: float  # bytes per step that do not depend on the tokens
    expert_read: float  # bytes per step if every expert is touched
    bandwidth: float
    act_per_token: float  # bytes of non-GEMM activation traffic per token

    @classmethod
    def of(cls, dep: Deployment) -> _Rates:
        m, acc, g = dep.model, dep.accelerator, dep.tp
        # Routed experts multiply at the expert precision, the rest (attention
        # projections, shared experts) at the dense precision.
        routed = (
            m.moe_layers * m.experts_per_token * m.params_per_expert
            if m.is_moe
            else 0.0
        )
        dense = 2.0 * (m.params_active - routed) / acc.peak_flops(dep.dense_precision)
        expert = 2.0 * routed / acc.peak_flops(dep.expert_math)
        attn_peak = acc.peak_flops(dep.attention_precision) * g
        dense_b = m.dense_params * PRECISION_BYTES[dep.dense_precision]
        expert_b = m.expert_params * PRECISION_BYTES[dep.expert_precision]
        if dep.ep:  # every rank runs the non-expert layers for its own sequences
            dense_read, expert_read = dense_b, expert_b / g
        else:  # pipeline micro-batches re-read their stage's weights once each
            dense_read = dense_b * dep.stages / g
            expert_read = expert_b * dep.stages / g
        return cls(
            gemm_per_token=dense / g,
            routed_per_token=expert / g,
            attn_per_decode_ctx=m.attention_flops_per_context(True) / attn_peak,
            attn_per_prefill_ctx=m.attention_flops_per_context(False) / attn_peak,
            kv_per_ctx=dep.kv_bytes_per_token * dep.kv_copies / g,
            dense_read=dense_read,
            expert_read=expert_read,
            bandwidth=acc.bandwidth_bytes_s,
            act_per_token=_activation_bytes(dep),
        )


def _activation_bytes(dep: Deployment) -> float:
    """Non-GEMM activation bytes one accelerator moves per token of the replica.

    Tensor parallel ranks each hold the whole d_model vector of every token of
    their stage's layers; expert parallel (data-parallel attention) ranks only
    their own tokens.
    """
    m = dep.model
    per_layer = ACT_VECTORS_PER_LAYER * m.d_model * ACT_BYTES
    if dep.ep:
        return per_layer * m.layers / dep.tp
    return per_layer * m.layers / dep.stages


def _touched_fraction(m: ModelArch, tokens: FloatArray) -> FloatArray:
    """Expected share of a layer's experts that ``tokens`` routed tokens reach."""
    share = m.experts_per_token / m.experts
    return 1.0 - (1.0 - share) ** np.maximum(tokens, 1.0)


def weight_read_bytes(dep: Deployment, tokens: FloatArray) -> FloatArray:
    """Weight bytes one accelerator of the replica reads in a step of ``tokens``."""
    r = dep.rates
    if not dep.model.is_moe:
        return np.full_like(tokens, r.dense_read + r.expert_read)
    out: FloatArray = r.dense_read + r.expert_read * _touched_fraction(
        dep.model, tokens
    )
    return out


def comm_s(dep: Deployment, eff: Efficiency, tokens: FloatArray) -> FloatArray:
    """Collectives of one step: TP all-reduces or the MoE all-to-all."""
    m = dep.model
    if dep.ep:
        g = dep.tp
        if g == 1:
            return np.zeros_like(tokens)
        acc = dep.accelerator
        link = acc.link_bytes_s if dep.stages == 1 else acc.scaleout_bytes_s
        per_rank = tokens / g * m.experts_per_token * m.d_model
        bytes_ = per_rank * (DISPATCH_BYTES + ACT_BYTES) * (g - 1) / g
        hops = 4.0 * eff.allreduce_hop_s * np.log2(g)
        out: FloatArray = m.moe_layers * (bytes_ / link + hops)
        return out
    t = dep.scaleup
    if t == 1:
        return np.zeros_like(tokens)
    msg = tokens * m.d_model * ACT_BYTES
    one = (
        2.0 * (t - 1) * (eff.allreduce_hop_s + msg / (t * dep.accelerator.link_bytes_s))
    )
    return 2.0 * m.layers * one


def expert_imbalance(dep: Deployment, tokens: FloatArray) -> FloatArray:
    """Busiest expert-parallel rank over the mean: tokens route at random, so a rank's
    load is binomial and the largest of ``g`` is about ``sqrt(2 ln g)`` standard
    deviations above the mean (large batches even it out)."""
    if not dep.ep or dep.tp < 2:
        return np.ones_like(tokens)
    per_rank = np.maximum(tokens * dep.model.experts_per_token / dep.tp, 1.0)
    out: FloatArray = 1.0 + np.sqrt(2.0 * np.log(dep.tp) / per_rank)
    return out


# Grouped (mixture-of-experts) GEMMs compute each expert's tokens in whole tiles
# of rows, sized to the expected tokens per expert: the next power of two, at
# least 8 and at most 64 (TensorRT-LLM's calculate_tile_tokens_dim for its
# Blackwell MoE kernels, as FlashInfer's get_tile_tokens_dim; DeepGEMM's Hopper
# grouped kernels align each expert to 128). Counts of the kernels, not fitted;
# the fit's loss over the published rows is least near them (docs/notes/perfmodel-validation.md,
# "Expert tiles").
EXPERT_TILE_MIN = 8.0
EXPERT_TILE_ROWS = 64.0


def tile_padding(m: ModelArch, tokens: FloatArray) -> FloatArray:
    """Rows the routed experts' GEMMs compute over the rows they hold in a step of
    ``tokens``: each expert's share rounded up to whole tiles. DeepSeek-R1 (256
    experts, 8 per token) at 4,500 tokens: 141 rows an expert, 1.23x; Mixtral (8
    experts, 2 per token): 1,125 rows, 1.03x."""
    rows = np.maximum(tokens * m.experts_per_token / m.experts, 1e-9)
    tile = np.clip(2.0 ** np.ceil(np.log2(rows)), EXPERT_TILE_MIN, EXPERT_TILE_ROWS)
    # One tile once the expert holds a token (a Poisson count), then a tile per
    # ``tile`` rows, the last half full on average (experts' loads differ:
    # routing is uneven).
    padded = tile * -np.expm1(-rows) + np.maximum(rows - tile / 2.0, 0.0)
    out: FloatArray = padded / rows
    return out


def ridge(compute: FloatArray, memory: FloatArray) -> FloatArray:
    """An operator group's time from its compute and memory times: their
    ``RIDGE_P``-norm. Far from the ridge it is the larger; at the ridge, where a
    kernel would have to keep both units saturated at once, 2^(1/p) times it."""
    if isinstance(compute, float) and isinstance(memory, float):
        # One step of the simulator (step_time_one): Python's float arithmetic,
        # the same IEEE operations at a tenth of numpy's cost on scalars.
        return _ridge_one(compute, memory)
    hi = np.maximum(compute, memory)
    safe = np.where(hi > 0, hi, 1.0)
    norm = ((compute / safe) ** RIDGE_P + (memory / safe) ** RIDGE_P) ** (1 / RIDGE_P)
    out: FloatArray = hi * norm
    return out


def _ridge_one(compute: float, memory: float) -> float:
    """``ridge`` of two numbers."""
    hi = max(compute, memory)
    safe = hi if hi > 0 else 1.0
    total: float = (compute / safe) ** RIDGE_P + (memory / safe) ** RIDGE_P
    norm: float = total ** (1 / RIDGE_P)
    return hi * norm


def step_time_s(
    dep: Deployment,
    eff: Efficiency,
    *,
    decode: FloatArray,
    context: FloatArray,
    prefill: FloatArray,
    prefill_context: FloatArray,
    compute_eff: FloatArray | None = None,
    memory_eff: FloatArray | None = None,
    sequences: FloatArray | None = None,
) -> FloatArray:
    """Time of one step: ``decode`` tokens at mean ``context`` plus ``prefill`` tokens.

    ``prefill_context`` is the mean context a prefill token attends to;
    ``sequences`` (default ``decode``) is how many sequences read their KV cache
    (speculative decoding verifies several tokens of one sequence in one read).
    Arrays broadcast, so one call evaluates a grid of coefficients (calibration).
    """
    m, r = dep.model, dep.rates
    seqs = decode if sequences is None else sequences
    eta_c = eff.compute if compute_eff is None else compute_eff
    eta_m = eff.memory if memory_eff is None else memory_eff
    tokens = decode + prefill
    if m.sliding_layers:
        context = m.attended_context(context)
        prefill_context = m.attended_context(prefill_context)
    attn = r.attn_per_decode_ctx * decode * context + (
        r.attn_per_prefill_ctx * prefill * prefill_context
    )
    bw = r.bandwidth * eta_m
    # Per operator group (spec 3.1): the GEMMs and the attention run as separate
    # kernels, each against its own compute and memory roofs (softly); times add.
    routed = (
        r.routed_per_token * expert_imbalance(dep, tokens) * tile_padding(m, tokens)
        if m.is_moe
        else 0.0
    )
    gemm_s = ridge(
        (r.gemm_per_token + routed) * tokens / eta_c,
        weight_read_bytes(dep, tokens) / bw,
    )
    attn_s = ridge(attn / eta_c, seqs * context * r.kv_per_ctx / bw)
    # Norms, residual adds and attention in/out are memory bound (their own kernels).
    act_s = tokens * r.act_per_token / bw
    comm = comm_s(dep, eff, tokens)
    # A step that mixes prefill into the batch runs without a captured CUDA graph:
    # every layer's kernels are launched one by one (~15 kernels x ~5 us).
    launches = np.where(prefill > 0, m.layers * eff.launch_per_layer_s, 0.0)
    total: FloatArray = gemm_s + attn_s + act_s + comm + eff.step_overhead_s + launches
    return total


def step_time_one(
    dep: Deployment,
    eff: Efficiency,
    *,
    decode: float,
    sequences: float,
    context: float,
    prefill: float,
    prefill_context: float,
) -> float:
    """``step_time_s`` of one step from plain numbers: the same formula, at half
    the cost of one-element arrays (numpy's functions on scalars skip the array
    set-up). The serving simulator calls it once per replica step."""
    # step_time_s's operators and numpy functions take floats as they take
    # arrays; its signature says arrays for the grids the fit evaluates.
    scalar: dict[str, Any] = {
        "decode": decode,
        "sequences": sequences,
        "context": context,
        "prefill": prefill,
        "prefill_context": prefill_context,
    }
    return float(step_time_s(dep, eff, **scalar))


def _f(x: float) -> FloatArray:
    return np.asarray([x], dtype=float)


def decode_tokens_per_s(
    dep: Deployment, eff: Efficiency, *, batch: int = 1, context: int = 512
) -> float:
    """Per-sequence decode speed at ``batch`` sequences of ``context`` tokens."""
    dep.check_fits(context)
    t = step_time_s(
        dep,
        eff,
        decode=_f(batch),
        context=_f(context),
        prefill=_f(0.0),
        prefill_context=_f(0.0),
    )
    return float(1.0 / t[0])


def prefill_s(dep: Deployment, eff: Efficiency, tokens: int) -> float:
    """Time to prefill one prompt of ``tokens`` tokens alone (unloaded TTFT)."""
    t = step_time_s(
        dep,
        eff,
        decode=_f(0.0),
        context=_f(0.0),
        prefill=_f(tokens),
        prefill_context=_f(tokens / 2.0),
    )
    return float(t[0])
