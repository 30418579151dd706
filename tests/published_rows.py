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


def repository_row(**over: object) -> dict[str, object]:
    """One result object of a results repository's summary.json (the form of
    mlcommons/inference_results_v6.1): 8 MI355X on one node, Llama 2 70B Offline
    (vLLM, FP4); ``over`` replaces or adds keys."""
    row: dict[str, object] = {
        "Organization": "AMD",
        "Availability": "available",
        "Division": "closed",
        "SystemType": "datacenter",
        "SystemName": "box",
        "Platform": "8xMI355X_2xEPYC_9575F",
        "Model": "llama2-70b-99",
        "MlperfModel": "llama2-70b-99",
        "Scenario": "Offline",
        "Result": 100000.0,
        "number_of_nodes": 1,
        "host_processor_model_name": "AMD EPYC 9575F",
        "host_processors_per_node": 2,
        "accelerator_model_name": "AMD Instinct MI355X 288GB HBM3e",
        "accelerators_per_node": 8,
        "total_accelerators": 8,
        "framework": "vLLM 0.22.1, PyTorch 2.10.0, ROCm 7.2.2",
        "version": "v6.1",
        "inferred": 0,
        "Units": "Tokens/s",
        "weight_data_types": "fp4",
    }
    row.update(over)
    return row
