"""Which Prometheus metrics of serving stacks mean what: one table, one reader.

Each series infermeter keeps (running requests, KV-cache usage, ...) lists
the metric names that carry it in vLLM, SGLang, TGI, TensorRT-LLM (Triton's
backend), llama.cpp's llama-server (``--metrics``) and NVIDIA's DCGM
exporter; the first name an endpoint exports wins.
Text is parsed with ``prometheus_client``'s parser. docs/endpoints.md has the
same table for readers.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True, slots=True)
class Source:
    """One metric name (a sample name, counters with ``_total``) and how to read it.

    ``labels``: samples must carry these label values. ``scale`` converts to
    the series' unit. ``how``: ``sum`` or ``mean`` over matching samples
    (several GPUs, TP ranks).
    """

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    scale: float = 1.0
    how: str = "sum"


@dataclass(frozen=True, slots=True)
class Series:
    key: str
    title: str
    unit: str
    sources: tuple[Source, ...]
    counter: bool = False  # cumulative: stored raw, shown as the change since start


TRT_REQUESTS = "nv_trt_llm_request_metrics"
TRT_KV = "nv_trt_llm_kv_cache_block_metrics"
CATALOGUE: tuple[Series, ...] = (
    Series(
        "running",
        "Requests running (server)",
        "requests",
        (
            Source("vllm:num_requests_running"),
            Source("sglang:num_running_reqs"),
            Source("tgi_batch_current_size"),
            Source(TRT_REQUESTS, (("request_type", "scheduled"),)),
            Source("llamacpp:requests_processing"),
        ),
    ),
    Series(
        "waiting",
        "Requests waiting (server)",
        "requests",
        (
            Source("vllm:num_requests_waiting"),
            Source("sglang:num_queue_reqs"),
            Source("tgi_queue_size"),
            Source(TRT_REQUESTS, (("request_type", "waiting"),)),
            Source("llamacpp:requests_deferred"),
        ),
    ),
    Series(
        "kv_cache_usage",
        "KV-cache usage (server)",
        "fraction",
        (
            Source("vllm:kv_cache_usage_perc", how="mean"),
            Source("vllm:gpu_cache_usage_perc", how="mean"),
            Source("sglang:token_usage", how="mean"),
            Source(TRT_KV, (("kv_cache_block_type", "fraction"),), how="mean"),
            # Older llama-server builds only; newer ones export no KV gauge.
            Source("llamacpp:kv_cache_usage_ratio", how="mean"),
        ),
    ),
    Series(
        "prefix_cache_hit_rate",
        "Prefix-cache hit rate (server)",
        "fraction",
        (
            Source("vllm:gpu_prefix_cache_hit_rate", how="mean"),
            Source("sglang:cache_hit_rate", how="mean"),
        ),
    ),
    Series(
        "prefix_cache_hits",
        "Prefix-cache hits (server, tokens)",
        "tokens",
        (
            Source("vllm:prefix_cache_hits_total"),
            Source("vllm:gpu_prefix_cache_hits_total"),
        ),
        counter=True,
    ),
    Series(
        "prefix_cache_queries",
        "Prefix-cache queries (server, tokens)",
        "tokens",
        (
            Source("vllm:prefix_cache_queries_total"),
            Source("vllm:gpu_prefix_cache_queries_total"),
        ),
        counter=True,
    ),
    Series(
        "preemptions",
        "Preemptions (server)",
        "preemptions",
        (Source("vllm:num_preemptions_total"),),
        counter=True,
    ),
    Series(
        "gpu_power",
        "GPU power",
        "W",
        (Source("DCGM_FI_DEV_POWER_USAGE"), Source("nv_gpu_power_usage")),
    ),
    Series(
        "gpu_utilization",
        "GPU utilisation",
        "%",
        (
            Source("DCGM_FI_DEV_GPU_UTIL", how="mean"),
            Source("nv_gpu_utilization", scale=100.0, how="mean"),
        ),
    ),
)
BY_KEY = {s.key: s for s in CATALOGUE}


def parse_samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)]; ``ValueError`` for text that is not Prometheus."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def read_series(
    samples: dict[str, list[tuple[dict[str, str], float]]],
) -> dict[str, tuple[str, float]]:
    """Series key -> (metric name used, value) for every series the text carries."""
    found: dict[str, tuple[str, float]] = {}
    for series in CATALOGUE:
        for source in series.sources:
            values = [
                v
                for labels, v in samples.get(source.name, [])
                if all(labels.get(k) == want for k, want in source.labels)
            ]
            if values:
                total = (
                    sum(values) if source.how == "sum" else sum(values) / len(values)
                )
                found[series.key] = (source.name, total * source.scale)
                break
    return found
