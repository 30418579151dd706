"""Server metric names of vLLM, SGLang, TGI, TensorRT-LLM and DCGM map to one set of series."""

from __future__ import annotations

import pytest

from infermeter.runs.metrics_catalogue import parse_samples, read_series
from infermeter.runs.server_metrics import metrics_url

VLLM = """
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 7.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 2.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.25
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{model_name="m"} 300.0
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{model_name="m"} 1.0
"""
SGLANG = """
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0"} 3
sglang:num_running_reqs{model_name="m",tp_rank="1"} 4
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.5
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m"} 0.75
"""
TGI = """
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 5
# TYPE tgi_queue_size gauge
tgi_queue_size 9
"""
TRT = """
# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 10
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="scheduled",version="1"} 6
# TYPE nv_trt_llm_kv_cache_block_metrics gauge
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="t",version="1"} 0.4
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used",model="t",version="1"} 400
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="a"} 0.5
nv_gpu_utilization{gpu_uuid="b"} 0.7
"""
DCGM = """
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0"} 350.5
DCGM_FI_DEV_POWER_USAGE{gpu="1"} 349.5
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0"} 90
DCGM_FI_DEV_GPU_UTIL{gpu="1"} 70
"""


def _read(text: str) -> dict[str, float]:
    return {k: v for k, (_, v) in read_series(parse_samples(text)).items()}


def test_vllm() -> None:
    assert _read(VLLM) == {
        "running": 7.0,
        "waiting": 2.0,
        "kv_cache_usage": 0.25,
        "prefix_cache_hits": 300.0,
        "preemptions": 1.0,
    }


def test_sglang_sums_ranks_and_reads_its_hit_rate() -> None:
    assert _read(SGLANG) == {
        "running": 7.0,
        "kv_cache_usage": 0.5,
        "prefix_cache_hit_rate": 0.75,
    }


def test_tgi() -> None:
    assert _read(TGI) == {"running": 5.0, "waiting": 9.0}


def test_tensorrt_llm_reads_label_values() -> None:
    assert _read(TRT) == pytest.approx(
        {"running": 6.0, "kv_cache_usage": 0.4, "gpu_utilization": 60.0}
    )


# llama-server --metrics (its own names, not vLLM's); counters it also exports
# (tokens predicted, decodes) map to no series here.
LLAMA_CPP = """\
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 3
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 5
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 39080
# TYPE llamacpp:n_busy_slots_per_decode gauge
llamacpp:n_busy_slots_per_decode 2.5
"""


def test_llama_server() -> None:
    assert _read(LLAMA_CPP) == {"running": 3.0, "waiting": 5.0}


def test_dcgm_power_sums_gpus_and_utilisation_averages() -> None:
    assert _read(DCGM) == {"gpu_power": 700.0, "gpu_utilization": 80.0}


def test_metric_names_used_are_reported() -> None:
    found = read_series(parse_samples(VLLM))
    assert found["kv_cache_usage"][0] == "vllm:kv_cache_usage_perc"


def test_not_prometheus_text_is_an_error() -> None:
    with pytest.raises(ValueError):
        parse_samples("<html>not metrics</html>\n{")


def test_metrics_url_from_base_url() -> None:
    assert metrics_url("http://h:8000/v1") == "http://h:8000/metrics"
    assert metrics_url("https://h/api/v1/") == "https://h/metrics"
