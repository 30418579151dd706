"""Accelerator, model-architecture and workload specs: package data, user files override.

Each spec table is a TOML file under ``perfmodel/data``; a user TOML file with
the same layout adds entries or replaces whole entries by key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from infermeter.errors import ConfigError

PRECISION_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "fp4": 0.5}


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

    def peak_flops(self, precision: str) -> float:
        """Dense FLOP/s at ``precision``; ConfigError when the part has no such rate."""
        rate = {"fp8": self.fp8_tflops, "fp4": self.fp4_tflops}.get(
            precision, self.bf16_tflops
        )
        if rate is None:
            have = [p for p in ("fp8", "fp4") if self.supports(p)]
            known = ", ".join(["fp16", "bf16", *have])
            raise ConfigError(
                f"{self.name} has no dense {precision.upper()} rate. "
                f"Use one of: {known}."
            )
        return rate * 1e12

    def supports(self, precision: str) -> bool:
        """Whether the part has a native compute rate for ``precision``."""
        if precision == "fp8":
            return self.fp8_tflops is not None
        if precision == "fp4":
            return self.fp4_tflops is not None
        return precision in PRECISION_BYTES

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9

    @property
    def bandwidth_bytes_s(self) -> float:
        return self.bandwidth_tbs * 1e12


@dataclass(frozen=True, slots=True)
class ModelArch:
    """A transformer's shape; KV bytes are derived, not stored."""

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

    def weight_bytes(self, precision: str) -> float:
        return self.params_total * PRECISION_BYTES[precision]

    def kv_bytes_per_token(self, kv_precision: str) -> float:
        """K and V of every layer for one token (``2 * L * H_kv * d_h * b``)."""
        return self.layers * self.kv_elements_per_layer * PRECISION_BYTES[kv_precision]

    @property
    def is_moe(self) -> bool:
        return self.experts > 1


@dataclass(frozen=True, slots=True)
class Workload:
    """An MLPerf LLM benchmark's token lengths and Server latency limits."""

    key: str
    model: str
    samples: int
    isl_mean: float
    osl_mean: float
    ttft_ms: float
    tpot_ms: float
    isl_assumed: bool
    source: str


def _read_toml(name: str) -> dict[str, Any]:
    text = (
        resources.files("infermeter.perfmodel")
        .joinpath("data")
        .joinpath(name)
        .read_text()
    )
    return tomllib.loads(text)


def _read_user(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"Spec file {str(path)!r} not found; pass an existing TOML file."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"Spec file {str(path)!r} is not valid TOML: {exc}."
        ) from None


def _accelerator(key: str, d: dict[str, Any]) -> Accelerator:
    def opt(name: str) -> float | None:
        return float(d[name]) if name in d else None

    try:
        return Accelerator(
            key=key,
            name=str(d.get("name", key)),
            vendor=str(d.get("vendor", "")),
            memory_gb=float(d["memory_gb"]),
            bandwidth_tbs=float(d["bandwidth_tbs"]),
            bf16_tflops=float(d["bf16_tflops"]),
            fp8_tflops=opt("fp8_tflops"),
            fp4_tflops=opt("fp4_tflops"),
            tdp_w=opt("tdp_w"),
            scaleup_link=str(d.get("scaleup_link", "")),
            scaleup_gbs=float(d.get("scaleup_gbs", 64.0)),
            aliases=tuple(str(a).lower() for a in d.get("aliases", [])),
            source=str(d.get("source", "user file")),
            date=str(d.get("date", "")),
        )
    except KeyError as exc:
        raise ConfigError(
            f"Accelerator {key!r} lacks field {exc.args[0]!r}; add it."
        ) from None


def _model(key: str, d: dict[str, Any]) -> ModelArch:
    try:
        kv_heads, head_dim = int(d["kv_heads"]), int(d["head_dim"])
        return ModelArch(
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
            experts=int(d.get("experts", 0)),
            experts_per_token=int(d.get("experts_per_token", 0)),
            kv_elements_per_layer=int(
                d.get("kv_elements_per_layer", 2 * kv_heads * head_dim)
            ),
            native_precision=str(d.get("native_precision", "bf16")),
            aliases=tuple(str(a).lower() for a in d.get("aliases", [])),
            source=str(d.get("source", "user file")),
        )
    except KeyError as exc:
        raise ConfigError(
            f"Model {key!r} lacks field {exc.args[0]!r}; add it."
        ) from None


@lru_cache(maxsize=8)
def _builtin_accelerators() -> dict[str, Accelerator]:
    return {k: _accelerator(k, v) for k, v in _read_toml("accelerators.toml").items()}


@lru_cache(maxsize=8)
def _builtin_models() -> dict[str, ModelArch]:
    return {k: _model(k, v) for k, v in _read_toml("models.toml").items()}


def accelerators(user_file: Path | None = None) -> dict[str, Accelerator]:
    """Every known accelerator by key; entries of ``user_file`` override by key."""
    table = dict(_builtin_accelerators())
    table.update({k: _accelerator(k, v) for k, v in _read_user(user_file).items()})
    return table


def models(user_file: Path | None = None) -> dict[str, ModelArch]:
    """Every known model architecture by key; entries of ``user_file`` override."""
    table = dict(_builtin_models())
    table.update({k: _model(k, v) for k, v in _read_user(user_file).items()})
    return table


@lru_cache(maxsize=1)
def workloads() -> dict[str, Workload]:
    """The MLPerf LLM workloads (lengths and Server limits) by benchmark key."""
    out = {}
    for key, d in _read_toml("workloads.toml").items():
        out[key] = Workload(
            key=key,
            model=str(d["model"]),
            samples=int(d["samples"]),
            isl_mean=float(d["isl_mean"]),
            osl_mean=float(d["osl_mean"]),
            ttft_ms=float(d["ttft_ms"]),
            tpot_ms=float(d["tpot_ms"]),
            isl_assumed=bool(d.get("isl_assumed", False)),
            source=str(d["source"]),
        )
    return out


T = TypeVar("T")


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


class _Aliased(Protocol):
    aliases: tuple[str, ...]


def _lookup(table: Mapping[str, T], name: str, what: str) -> T:
    """An entry by key or alias; an unknown name lists the known keys."""
    key = _norm(name)
    if key in table:
        return table[key]
    for entry in table.values():
        if key in cast(_Aliased, entry).aliases:
            return entry
    raise ConfigError(f"Unknown {what} {name!r}. Known: {', '.join(sorted(table))}.")


def get_accelerator(name: str, user_file: Path | None = None) -> Accelerator:
    """Look an accelerator up by key or alias; unknown names list the known keys."""
    return _lookup(accelerators(user_file), name, "accelerator")


def get_model(name: str, user_file: Path | None = None) -> ModelArch:
    """Look a model up by key or alias; unknown names list the known keys."""
    return _lookup(models(user_file), name, "model")


def get_workload(name: str) -> Workload:
    """The workload of a benchmark or model key (``llama2-70b-99`` -> ``llama2-70b``)."""
    table = workloads()
    key = _norm(name)
    if key in table:
        return table[key]
    arch = get_model(key)
    for wl in table.values():
        if wl.model == arch.key:
            return wl
    known = ", ".join(sorted(table))
    raise ConfigError(f"No workload for {name!r}. Known: {known}.")


def match_accelerator(raw: str) -> Accelerator | None:
    """Map an MLPerf accelerator string to a SKU by its longest matching alias."""
    text = raw.lower()
    best: tuple[int, Accelerator] | None = None
    for acc in _builtin_accelerators().values():
        for alias in (acc.key, *acc.aliases):
            if alias in text and (best is None or len(alias) > best[0]):
                best = (len(alias), acc)
    return best[1] if best else None
