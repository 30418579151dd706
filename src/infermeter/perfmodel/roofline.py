"""Step-time roofline (spec performance-model.md section 3.1) with efficiency coefficients.

A step of continuous batching runs ``decode`` sequences one token each plus a
number of prefill tokens; its time is the larger of FLOPs over derated peak and
bytes over derated bandwidth, plus tensor-parallel all-reduces and a fixed
per-step overhead.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError
from infermeter.perfmodel.specs import PRECISION_BYTES, Accelerator, ModelArch

FloatArray = npt.NDArray[np.float64]
ACT_BYTES = 2.0  # activations cross the all-reduce in 16-bit


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Achievable fractions of peak and fixed costs; one set per (SKU, stack, precision).

    The defaults are the uncalibrated values: ``memory`` 0.9 and the all-reduce
    and step costs put batch-1 Llama 2 70B FP16 decode at 79/121 tok/s on H100
    TP4/TP8 and 153 tok/s on H200 TP8 (docs/perfmodel.md). ``server`` derates
    the Server throughput relative to the Offline one.
    """

    compute: float = 0.6
    memory: float = 0.9
    allreduce_hop_s: float = 1.0e-6
    step_overhead_s: float = 3.0e-4
    server: float = 1.0


@dataclass(frozen=True, slots=True)
class Deployment:
    """One model replica: accelerator, tensor-parallel size and precision."""

    accelerator: Accelerator
    model: ModelArch
    precision: str
    tp: int = 1
    kv_precision: str = ""
    memory_reserve: float = 0.1
    max_batch: int = 1024
    _kv: str = field(init=False, repr=False, default="")

    def __post_init__(self) -> None:
        if self.precision not in PRECISION_BYTES:
            known = ", ".join(PRECISION_BYTES)
            raise ConfigError(f"Unknown precision {self.precision!r}. Known: {known}.")
        if self.tp < 1:
            raise ConfigError(f"Tensor-parallel size must be >= 1 (got {self.tp}).")
        self.accelerator.peak_flops(self.precision)  # raises if unsupported
        kv = self.kv_precision or (
            "fp8" if PRECISION_BYTES[self.precision] <= 1 else "fp16"
        )
        object.__setattr__(self, "_kv", kv)

    @property
    def kv_bytes_per_token(self) -> float:
        return self.model.kv_bytes_per_token(self._kv)

    @property
    def weight_bytes(self) -> float:
        return self.model.weight_bytes(self.precision)

    @property
    def free_bytes(self) -> float:
        """HBM left for KV cache across the TP group after weights and the reserve."""
        usable = self.tp * self.accelerator.memory_bytes * (1.0 - self.memory_reserve)
        return usable - self.weight_bytes

    def kv_capacity_tokens(self) -> int:
        return max(0, int(self.free_bytes / self.kv_bytes_per_token))

    def check_fits(self, tokens_per_sequence: float = 0.0) -> None:
        """ConfigError with the numbers when weights (plus one sequence) do not fit."""
        need = self.weight_bytes + tokens_per_sequence * self.kv_bytes_per_token
        have = self.tp * self.accelerator.memory_bytes * (1.0 - self.memory_reserve)
        if need > have:
            raise ConfigError(
                f"{self.model.name} at {self.precision.upper()} needs "
                f"{need / 1e9:.1f} GB (weights {self.weight_bytes / 1e9:.1f} GB) but "
                f"TP{self.tp} x {self.accelerator.name} offers {have / 1e9:.1f} GB "
                f"usable; raise the TP size or lower the precision."
            )

    def with_tp(self, tp: int) -> Deployment:
        return replace(self, tp=tp)


def _moe_weight_bytes(dep: Deployment, tokens: FloatArray) -> FloatArray:
    """Weight bytes read in a step: MoE reads only the experts its tokens route to."""
    m = dep.model
    total = np.full_like(tokens, dep.weight_bytes)
    if not m.is_moe:
        return total
    per_expert = (m.params_total - m.params_active) / (m.experts - m.experts_per_token)
    shared = m.params_total - m.experts * per_expert
    touched = 1.0 - (1.0 - m.experts_per_token / m.experts) ** np.maximum(tokens, 1.0)
    return (shared + m.experts * per_expert * touched) * PRECISION_BYTES[dep.precision]


def allreduce_s(dep: Deployment, eff_hop_s: float, tokens: FloatArray) -> FloatArray:
    """Ring all-reduce time of every layer's two all-reduces for ``tokens`` tokens."""
    t = dep.tp
    if t == 1:
        return np.zeros_like(tokens)
    link = dep.accelerator.scaleup_gbs * 1e9 / 2.0  # datasheets quote both directions
    msg = tokens * dep.model.d_model * ACT_BYTES
    one = 2.0 * (t - 1) * (eff_hop_s + msg / (t * link))
    return 2.0 * dep.model.layers * one


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
) -> FloatArray:
    """Time of one step: ``decode`` sequences at mean ``context`` plus ``prefill`` tokens.

    ``prefill_context`` is the mean context a prefill token attends to. Arrays
    broadcast, so one call evaluates a grid of coefficients (calibration).
    """
    m = dep.model
    eta_c = np.asarray(eff.compute if compute_eff is None else compute_eff, dtype=float)
    eta_m = np.asarray(eff.memory if memory_eff is None else memory_eff, dtype=float)
    tokens = decode + prefill
    attn_width = m.heads * m.head_dim
    flops = 2.0 * m.params_active * tokens + 4.0 * m.layers * attn_width * (
        decode * context + prefill * prefill_context
    )
    kv_read = decode * context * dep.kv_bytes_per_token
    bytes_ = _moe_weight_bytes(dep, tokens) + kv_read
    peak = dep.tp * dep.accelerator.peak_flops(dep.precision)
    bw = dep.tp * dep.accelerator.bandwidth_bytes_s
    compute = flops / (peak * eta_c)
    memory = bytes_ / (bw * eta_m)
    comm = allreduce_s(dep, eff.allreduce_hop_s, tokens)
    return np.maximum(compute, memory) + comm + eff.step_overhead_s


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
