"""Accelerator, model-architecture and workload specs: package data, user files override.

Each spec table is a TOML file under ``perfmodel/data``; a user TOML file with
the same layout adds entries or replaces whole entries by key. The accelerator
key (``h200-sxm``, ``b200``, ``mi355x``) is the one name of a part everywhere;
aliases resolve MLPerf strings and NVML/ROCm device names to it
(``perfmodel.parts``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.perfmodel.arch import ModelArch, get_model, models
from infermeter.perfmodel.tables import (
    COMPUTE_RATE,
    PRECISION_BYTES,
    check_positive,
    lookup,
    norm,
    not_a_number,
    read_toml,
    read_user,
)

__all__ = [
    "COMPUTE_RATE",
    "POWER_REFERENCE",
    "PRECISION_BYTES",
    "WEIGHT_ONLY_MATH",
    "Accelerator",
    "ModelArch",
    "Workload",
    "accelerators",
    "get_accelerator",
    "get_model",
    "get_workload",
    "match_accelerator",
    "models",
    "power_bound",
    "runs_at",
    "runs_weight_only",
    "workloads",
]

# A checkpoint that ships FP4 experts (gpt-oss-120b's MXFP4) keeps them FP4 on a part
# without FP4 math: the MoE kernels dequantise each tile and multiply in BF16
# (W4A16; vLLM's and TensorRT-LLM's Triton MoE kernels on Hopper), which is how one
# 80 GB H100 holds the 117 B-parameter model, as its model card says.
WEIGHT_ONLY_MATH = "bf16"


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One accelerator SKU, dense peak rates per device."""

    key: str
    name: str
    vendor: str
    memory_gb: float
    bandwidth_tbs: float
    bf16_tflops: float
    fp8_tflops: float | None
    fp4_tflops: float | None
    tdp_w: float | None
    scaleup_link: str
    scaleup_gbs: float
    aliases: tuple[str, ...]
    source: str
    date: str
    int8_tops: float | None = None
    scaleup_domain: int = 1
    scaleout_gbs: float = 25.0
    kind: str = "gpu"
    arch: str = ""
    # Weight formats whose matrix multiplies run at another format's rate on this
    # part, overriding COMPUTE_RATE: (weights, rate) pairs, e.g. ("int8", "bf16")
    # where LLM stacks quantise weights only.
    matmul: tuple[tuple[str, str], ...] = ()
    # Rates (TFLOPS) the part sustains within its power budget where below the
    # datasheet's peak: (rate, TFLOPS) pairs set by ``power_bound``.
    power_caps: tuple[tuple[str, float], ...] = ()

    def datasheet_rate(self, key: str) -> float | None:
        """The datasheet's dense peak of a rate ("bf16", "fp8", "fp4", "int8")."""
        return {
            "bf16": self.bf16_tflops,
            "fp8": self.fp8_tflops,
            "fp4": self.fp4_tflops,
            "int8": self.int8_tops,
        }[key]

    def _rate(self, precision: str) -> float | None:
        key = dict(self.matmul).get(precision) or COMPUTE_RATE.get(precision, "bf16")
        rate = self.datasheet_rate(key)
        cap = dict(self.power_caps).get(key)
        return rate if rate is None or cap is None else min(rate, cap)

    def peak_flops(self, precision: str) -> float:
        """Dense FLOP/s at ``precision``; ConfigError when the part has no such rate."""
        rate = self._rate(precision)
        if rate is None:
            raise ConfigError(
                f"{self.name} has no dense {precision.upper()} rate. "
                f"Use one of: {', '.join(self.precisions())}."
            )
        return rate * 1e12

    def supports(self, precision: str) -> bool:
        """Whether the part has a native compute rate for ``precision``."""
        return precision in PRECISION_BYTES and self._rate(precision) is not None

    def precisions(self) -> list[str]:
        return [p for p in ("fp4", "fp8", "int8", "fp16", "bf16") if self.supports(p)]

    def lowest_precision(self) -> str:
        """The narrowest floating-point format the part computes natively."""
        return next(p for p in ("fp4", "fp8", "bf16") if self.supports(p))

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9

    @property
    def bandwidth_bytes_s(self) -> float:
        return self.bandwidth_tbs * 1e12

    @property
    def link_bytes_s(self) -> float:
        """One-way scale-up bandwidth per device (datasheets quote both ways)."""
        return max(self.scaleup_gbs, 1.0) * 1e9 / 2.0

    @property
    def scaleout_bytes_s(self) -> float:
        return max(self.scaleout_gbs, 0.1) * 1e9

    @property
    def usual_stack(self) -> str:
        """The serving stack a plan assumes on this part unless told: TensorRT-LLM on
        NVIDIA parts, PyTorch on CPUs, vLLM elsewhere (it runs on AMD, Intel and
        Google parts); the stacks their published LLM rows run. TensorRT-LLM's
        fitted effects must not reach parts it does not run on."""
        if self.kind == "cpu":
            return "pytorch"
        return "trt-llm" if self.vendor == "nvidia" else "vllm"

    @property
    def pcie_only(self) -> bool:
        """Cards that reach each other only over PCIe (no accelerator link)."""
        return self.scaleup_domain == 1 and self.scaleup_link.startswith("PCIe")


def runs_weight_only(acc: Accelerator, model: ModelArch, precision: str) -> bool:
    """Whether ``model`` runs at ``precision`` on ``acc`` with FP4 weights the part
    cannot multiply natively: only a checkpoint that ships FP4 experts does
    (``WEIGHT_ONLY_MATH``); stacks do not quantise other checkpoints that way."""
    return (
        precision == "fp4"
        and model.is_moe
        and model.native_precision == "fp4"
        and not acc.supports("fp4")
    )


# The precisions a plan tries, lowest first (the planner's and an estimate's order).
PRECISIONS = ("fp4", "fp8", "fp16")


def runs_at(acc: Accelerator, model: ModelArch, precision: str) -> bool:
    """Whether ``acc`` runs ``model`` at ``precision``: natively, or as an FP4
    checkpoint's experts weight-only (``runs_weight_only``)."""
    return acc.supports(precision) or runs_weight_only(acc, model, precision)


@dataclass(frozen=True, slots=True)
class Workload:
    """An MLPerf LLM benchmark's token lengths and latency limits per scenario."""

    key: str
    model: str
    samples: int
    isl_mean: float
    osl_mean: float
    ttft_ms: float
    tpot_ms: float
    isl_assumed: bool
    source: str
    osl_cv: float = 0.7
    osl_max: int = 1024
    interactive_ttft_ms: float | None = None
    interactive_tpot_ms: float | None = None
    interactive_spec_draft: int = 0
    spec_acceptance: float = 0.7
    beams: int = 1
    introduced: str = ""

    @property
    def resident_context(self) -> float:
        """Mean context of a sequence in a running batch: ISL + E[OSL^2] / (2 E[OSL]).

        A sequence stays in the batch for as many steps as it has output tokens,
        so long outputs are over-represented (length-biased sampling).
        """
        return self.isl_mean + self.osl_mean * (1.0 + self.osl_cv**2) / 2.0

    def limits(self, scenario: str) -> tuple[float, float] | None:
        """(TTFT ms, TPOT ms) bounds of ``scenario``; None for Offline."""
        if scenario == "Server":
            return self.ttft_ms, self.tpot_ms
        if scenario == "Interactive":
            if self.interactive_tpot_ms is None or self.interactive_ttft_ms is None:
                raise ConfigError(
                    f"{self.key} has no Interactive scenario; use Offline or Server."
                )
            return self.interactive_ttft_ms, self.interactive_tpot_ms
        if scenario == "Offline":
            return None
        raise ConfigError(
            f"Unknown scenario {scenario!r}. Known: Offline, Server, Interactive."
        )

    def spec_draft(self, scenario: str) -> int:
        """Tokens drafted per step where the scenario standardises speculative decoding."""
        return self.interactive_spec_draft if scenario == "Interactive" else 0

    def spec_tokens(self, scenario: str) -> float:
        """Mean tokens a decode step emits: 1 + a + a^2 + ... + a^draft for a chain of
        ``draft`` drafted tokens each accepted with probability ``a`` (EAGLE/MTP)."""
        a = self.spec_acceptance
        return float(sum(a**i for i in range(self.spec_draft(scenario) + 1)))


def _opt(d: dict[str, Any], name: str) -> float | None:
    return float(d[name]) if name in d else None


_LINKS = ("scaleup_gbs", "scaleout_gbs")  # 0: no such link
_POSITIVE = (
    "memory_gb",
    "bandwidth_tbs",
    "bf16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "int8_tops",
    "tdp_w",
    "scaleup_domain",
    *_LINKS,
)


def _accelerator(key: str, d: dict[str, Any]) -> Accelerator:
    try:
        acc = Accelerator(
            key=key,
            name=str(d.get("name", key)),
            vendor=str(d.get("vendor", "")),
            memory_gb=float(d["memory_gb"]),
            bandwidth_tbs=float(d["bandwidth_tbs"]),
            bf16_tflops=float(d["bf16_tflops"]),
            fp8_tflops=_opt(d, "fp8_tflops"),
            fp4_tflops=_opt(d, "fp4_tflops"),
            tdp_w=_opt(d, "tdp_w"),
            scaleup_link=str(d.get("scaleup_link", "")),
            scaleup_gbs=float(d.get("scaleup_gbs", 64.0)),
            aliases=tuple(str(a).lower() for a in d.get("aliases", [])),
            source=str(d.get("source", "user file")),
            date=str(d.get("date", "")),
            int8_tops=_opt(d, "int8_tops"),
            scaleup_domain=int(d.get("scaleup_domain", 1)),
            scaleout_gbs=float(d.get("scaleout_gbs", 25.0)),
            kind=str(d.get("kind", "gpu")),
            arch=str(d.get("arch", "")),
            matmul=_matmul(key, d.get("matmul", {})),
        )
    except KeyError as exc:
        raise ConfigError(
            f"Accelerator {key!r} lacks field {exc.args[0]!r}; add it."
        ) from None
    except (TypeError, ValueError) as exc:
        raise not_a_number("Accelerator", key, exc) from None
    check_positive("Accelerator", key, acc, _POSITIVE, zero_ok=_LINKS)
    return acc


@lru_cache(maxsize=8)
def _builtin_accelerators() -> dict[str, Accelerator]:
    return {k: _accelerator(k, v) for k, v in read_toml("accelerators.toml").items()}


_RATES = ("bf16", "fp8", "fp4", "int8")


def _matmul(key: str, table: Any) -> tuple[tuple[str, str], ...]:
    """An accelerator's ``matmul`` table ({weights = rate}), checked."""
    if not isinstance(table, dict):
        raise ConfigError(
            f"Accelerator {key!r}: matmul must be a table such as "
            f'{{ int8 = "bf16" }} (got {table!r}).'
        )
    pairs = tuple(sorted((str(w), str(r)) for w, r in table.items()))
    for weights, rate in pairs:
        if weights not in PRECISION_BYTES or rate not in _RATES:
            raise ConfigError(
                f"Accelerator {key!r}: matmul {weights} = {rate!r} is not a weight "
                f"format and a rate; weights are one of {', '.join(PRECISION_BYTES)}, "
                f"rates one of {', '.join(_RATES)}."
            )
    return pairs


def accelerators(user_file: Path | None = None) -> dict[str, Accelerator]:
    """Every known accelerator by key; entries of ``user_file`` override by key."""
    if user_file is None:
        return dict(_bounded_builtin())
    table = dict(_builtin_accelerators())
    table.update({k: _accelerator(k, v) for k, v in read_user(user_file).items()})
    return power_bound(table)


@lru_cache(maxsize=1)
def _bounded_builtin() -> dict[str, Accelerator]:
    return power_bound(_builtin_accelerators())


# A datasheet's tensor rates are peaks; a part sustains them only within its power
# budget. The base part of a generation (the silicon its later and smaller parts
# reuse) reaches its peak at its TDP; a part of the generation that claims more
# operations per watt at a rate is held to the base's operations per watt times its
# own TDP: B300's FP4 13.5 PF at 1,100 W to 9.9 PF (B200: 9 PF at 1,000 W), the
# H100 PCIe's FP8 1,513 TF at 350 W to 990 (H100 SXM: 1,979 at 700 W). Where the fit's
# own loss over the published rows decides it, it prefers this (docs/notes/perfmodel-validation.md,
# "Power-bound rates").
POWER_REFERENCE = {
    "blackwell": "b200",
    "hopper": "h100-sxm",
    "cdna3": "mi300x",
    "cdna4": "mi355x",
    "ada": "l40s",
}


def power_bound(table: dict[str, Accelerator]) -> dict[str, Accelerator]:
    """``table`` with each part's ``power_caps`` set against its generation's base
    part (``POWER_REFERENCE``)."""
    out = dict(table)
    for key, acc in table.items():
        ref = table.get(POWER_REFERENCE.get(acc.arch, ""))
        if ref is None or ref.key == key or not (acc.tdp_w and ref.tdp_w):
            continue
        caps = []
        for rate in _RATES:
            own, base = acc.datasheet_rate(rate), ref.datasheet_rate(rate)
            if own is not None and base is not None:
                cap = acc.tdp_w * base / ref.tdp_w
                if own > cap:
                    caps.append((rate, cap))
        if caps:
            out[key] = replace(acc, power_caps=tuple(caps))
    return out


def _workload(key: str, d: dict[str, Any]) -> Workload:
    return Workload(
        key=key,
        model=str(d["model"]),
        samples=int(d["samples"]),
        isl_mean=float(d["isl_mean"]),
        osl_mean=float(d["osl_mean"]),
        ttft_ms=float(d["ttft_ms"]),
        tpot_ms=float(d["tpot_ms"]),
        isl_assumed=bool(d.get("isl_assumed", False)),
        source=str(d["source"]),
        osl_cv=float(d.get("osl_cv", 0.7)),
        osl_max=int(d.get("osl_max", 1024)),
        interactive_ttft_ms=_opt(d, "interactive_ttft_ms"),
        interactive_tpot_ms=_opt(d, "interactive_tpot_ms"),
        interactive_spec_draft=int(d.get("interactive_spec_draft", 0)),
        spec_acceptance=float(d.get("spec_acceptance", 0.7)),
        beams=int(d.get("beams", 1)),
        introduced=str(d.get("introduced", "")),
    )


@lru_cache(maxsize=1)
def workloads() -> dict[str, Workload]:
    """The MLPerf LLM workloads (lengths and latency limits) by benchmark key."""
    return {k: _workload(k, d) for k, d in read_toml("workloads.toml").items()}


def get_accelerator(name: str, user_file: Path | None = None) -> Accelerator:
    """Look an accelerator up by key, alias or device name; unknown names list the keys."""
    table = accelerators(user_file)
    try:
        return lookup(table, name, "accelerator")
    except ConfigError:
        found = match_accelerator(name)
        if found is not None and user_file is None:
            return found
        raise


def get_workload(name: str) -> Workload:
    """The workload of a benchmark or model key (``llama2-70b-99`` -> ``llama2-70b``)."""
    table = workloads()
    key = norm(name)
    if key in table:
        return table[key]
    arch = get_model(key)
    for wl in table.values():
        if wl.model == arch.key:
            return wl
    known = ", ".join(sorted(table))
    raise ConfigError(f"No workload for {name!r}. Known: {known}.")


def match_accelerator(raw: str) -> Accelerator | None:
    """Map an MLPerf accelerator string or a device name to a SKU by its longest alias."""
    text = plain_name(raw)
    best: tuple[int, Accelerator] | None = None
    for acc in _bounded_builtin().values():  # no copy: called per row read
        for alias in (acc.key, *acc.aliases):
            if (best is None or len(alias) > best[0]) and _contains(text, alias):
                best = (len(alias), acc)
    return best[1] if best else None


_MARKS = re.compile(r"\((?:r|tm|c)\)|[\u00ae\u2122\u00a9]", re.I)


def plain_name(raw: str) -> str:
    """A device name as aliases are written: lower case, trademark marks dropped
    ("Intel(R) Arc Pro(R) B70" -> "intel arc pro b70"), spaces single."""
    text = _MARKS.sub(" ", raw.lower().replace("_", "-"))
    return re.sub(r"\s+", " ", text).strip()


def _contains(text: str, alias: str) -> bool:
    """``alias`` in ``text`` as whole words ("l4" is not in "l40s", "b200" not in "gb200")."""
    return re.search(rf"(?<![a-z0-9]){re.escape(alias)}(?![a-z0-9])", text) is not None
