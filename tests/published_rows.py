"""A published MLPerf summary row the performance model places, for reader and CLI tests."""

from __future__ import annotations


def published_row(**over: object) -> dict[str, object]:
    """One closed datacenter Llama 2 70B Offline row of 2 nodes x 8 H100 (TRT-LLM);
    ``over`` replaces or adds keys."""
    row: dict[str, object] = {
        "ID": "5.1-9999",
        "version": "v5.1",
        "Submitter": "X",
        "Category": "closed",
        "Suite": "datacenter",
        "System": "box",
        "Model": "llama2-70b-99",
        "Scenario": "Offline",
        "Nodes": 2,
        "Accelerator": "NVIDIA H100-SXM-80GB",
        "a#": 8.0,
        "Software": "TensorRT 10.2.0, CUDA 12.4",
        "weight_data_types": "fp16",
        "Performance_Result": 40000.0,
        "Performance_Units": "Tokens/s",
    }
    row.update(over)
    return row
