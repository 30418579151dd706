"""The files of one MLPerf Endpoints point directory (§8.1 / §8.3), from a stored point.

``result_summary.json`` keeps the stored figures (nanoseconds, percentile keys "50",
"90", ...) and adds ``system_tps`` and ``tps_per_user`` derived exactly as the checker
derives them (output tokens over ``duration_ns``; 1000 / TPOT p90 ms). ``point.yaml``
and ``system_desc.json`` carry what infermeter knows; what only the submitter knows
is a string starting with ``FILL_IN`` (``FILL_IN_MARK``), so ``grep -r FILL_IN`` lists it.
YAML is written by hand (double-quoted JSON strings are YAML): infermeter's core needs
no YAML library.
"""

from __future__ import annotations

import json
from typing import Any

from infermeter.runs.endpoints_rules import (
    SEED_COHORT,
    SEED_SETS,
    Regions,
    min_duration_s,
)

FILL_IN_MARK = "FILL_IN"
# Beside a reference client's run folder: what infermeter knows of the point (its
# seed set, dataset size, passes), so the reference's own files stay as it wrote them.
SIDECAR = "infermeter_point.json"


def fill_in(what: str) -> str:
    """A field only the submitter can fill, marked for ``grep -r FILL_IN``."""
    return f"{FILL_IN_MARK}: {what}"


def percentile(stats: dict[str, Any] | None, q: float) -> float | None:
    """A rollup's percentile ``q`` whether keyed "90" (infermeter) or "90.0" (the
    reference client), as the checker reads both."""
    for key, value in ((stats or {}).get("percentiles") or {}).items():
        try:
            if float(key) == q:
                return float(value)
        except ValueError:
            continue
    return None


def summary_for_checker(summary: dict[str, Any]) -> dict[str, Any]:
    """The stored ``result_summary.json`` plus the derived curve figures the checker
    recomputes (stored only when they can be derived)."""
    out = dict(summary)
    tokens = float((summary.get("output_sequence_lengths") or {}).get("total", 0))
    duration_ns = float(summary.get("duration_ns") or 0)
    if duration_ns > 0:
        out["system_tps"] = tokens / (duration_ns / 1e9)
    p90 = percentile(summary.get("tpot"), 90.0)
    if p90:
        out["tps_per_user"] = 1000.0 / (float(p90) / 1e6)
    return out


def point_yaml(
    point: dict[str, Any], regions: Regions, meta: dict[str, Any]
) -> dict[str, Any]:
    """§8.3's disclosure of one point. ``point``: concurrency, warmup and steady
    state as stored; ``meta``: the submission-wide fields (model, dataset, seed set)."""
    c = int(point["concurrency"])
    seed_set = meta.get("seed_set")
    runtime: dict[str, Any] = dict(SEED_SETS[seed_set]) if seed_set else {}
    doc: dict[str, Any] = {
        "concurrency": c,
        "region": regions.region_of(c),
        "dataset": meta["dataset"],
        "runtime_settings": {
            "load_pattern": "concurrency",
            "min_duration_ms": min_duration_s(c) * 1000,
            "stream_all_chunks": True,
            "runtime": runtime,
        },
        "warmup": point["warmup"],
        "division": meta["division"],
        "max_supported_concurrency": regions.c_max,
        "model_name": meta["model_name"],
        "model_precision": meta.get("model_precision") or fill_in("e.g. fp8"),
        "link_to_model": meta.get("link_to_model") or fill_in("model URL"),
        "dataset_name": meta["dataset"],
        "dataset_type": meta.get("dataset_type") or "performance",
        "dataset_link": meta.get("dataset_link") or fill_in("dataset URL"),
        "offline": "elected" if c == regions.c_max else "none",
        "shared_src": "src",
        "shared_docs": "docs",
    }
    if point.get("steady_state"):
        doc["steady_state"] = point["steady_state"]
    if seed_set:
        doc["seed_set"] = seed_set
        doc["target_cohort"] = SEED_COHORT
    else:
        doc["seed_set"] = fill_in("a published seed set id; this run was unbound")
        doc["target_cohort"] = fill_in("cohort id, e.g. " + SEED_COHORT)
    return doc


def system_desc(meta: dict[str, Any], c_max: int) -> dict[str, Any]:
    """§8.2's system description: what infermeter knows, the rest marked."""
    name = meta["system"]
    return {
        "system_name": name,
        "shortened_system_name": name[:20],
        "system_availability_status": meta.get("availability") or "RDI",
        "division": meta["division"],
        "max_supported_concurrency": c_max,
        "endpoint_url": meta.get("endpoint_url"),
        "serving_framework": meta.get("serving_framework") or fill_in("e.g. vLLM 0.11"),
        "system_size": fill_in("e.g. 1 node"),
        "system_node_ensemble_count": 1,
        "system_node_ensemble_total": 1,
        "node_types": [
            {
                "system_node_ensemble_id": 1,
                "number_of_nodes": 1,
                "host_processor_model_name": fill_in("CPU model"),
                "host_processor_core_count": 0,
                "host_memory_configuration": fill_in("e.g. 16x 64 GB DDR5"),
                "host_network_card_count": fill_in("network topology: NICs"),
                "host_networking": fill_in("network topology"),
                "driver": fill_in("accelerator driver version"),
                "filesystem": fill_in("e.g. ext4"),
                "operating_system": fill_in("OS and version"),
                "other_software_stack": fill_in("software disclosure"),
                "accelerator_info": [
                    {
                        "accelerator_model_name": fill_in("accelerator"),
                        "accelerators_per_node": 0,
                    }
                ],
            }
        ],
    }


def config_yaml(point: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The configuration the point ran with, shaped like the reference client's YAML
    (``name``, ``type``, ``model_params``, ``datasets``, ``settings``,
    ``endpoint_config``), plus infermeter's own load spec."""
    c = int(point["concurrency"])
    seed_set = meta.get("seed_set")
    return {
        "name": f"infermeter-{meta['model_name']}-c{c}",
        "version": "1.0",
        "type": "online",
        "harness": "infermeter (not the reference client: infermeter results, unverified)",
        "model_params": {"name": meta["model_name"], "streaming": True},
        "datasets": [
            {"name": meta["dataset"], "type": "performance", "samples": meta["samples"]}
        ],
        "settings": {
            "runtime": {
                "min_duration_ms": int(point["window_s"] * 1000),
                **(SEED_SETS[seed_set] if seed_set else {}),
            },
            "load_pattern": {"type": "concurrency", "target_concurrency": c},
        },
        "endpoint_config": {"endpoints": [meta.get("endpoint_url") or fill_in("URL")]},
        "infermeter": {"load": point["load"], "seed_set": seed_set or "unbound"},
    }


def to_yaml(value: Any, indent: int = 0) -> str:
    """Block-style YAML of plain data (mappings, lists, scalars)."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}\n"
        return "".join(
            _yaml_item(pad + f"{_key(k)}:", v, indent) for k, v in value.items()
        )
    if isinstance(value, list):
        if not value:
            return pad + "[]\n"
        return "".join(_yaml_item(pad + "-", v, indent) for v in value)
    return pad + _scalar(value) + "\n"


def _yaml_item(head: str, value: Any, indent: int) -> str:
    if isinstance(value, dict | list) and value:
        return head + "\n" + to_yaml(value, indent + 2)
    return head + " " + to_yaml(value).strip() + "\n"


def _key(key: object) -> str:
    text = str(key)
    return text if text.replace("_", "").isalnum() else json.dumps(text)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)
