"""``/metrics`` of infermeter's own endpoints: vLLM-named Prometheus metrics.

The mock and simulated servers export the names vLLM exports, so a run
against them exercises the same scraping path as one against vLLM. Values
are read when scraped (a collector), so serving requests costs nothing extra.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

CONTENT_TYPE = CONTENT_TYPE_LATEST


@dataclass(frozen=True, slots=True)
class Value:
    """One exported value: ``kind`` gauge or counter (name without ``_total``)."""

    kind: str
    name: str
    help: str
    value: float


class _Collector:
    def __init__(self, read: Callable[[], list[Value]], model: str) -> None:
        self._read, self._model = read, model

    def collect(self) -> Iterator[Metric]:
        for v in self._read():
            family: GaugeMetricFamily | CounterMetricFamily
            if v.kind == "counter":
                family = CounterMetricFamily(v.name, v.help, labels=["model_name"])
            else:
                family = GaugeMetricFamily(v.name, v.help, labels=["model_name"])
            family.add_metric([self._model], v.value)
            yield family


class Exporter:
    """Renders the values ``read()`` returns as Prometheus text, per scrape."""

    def __init__(self, read: Callable[[], list[Value]], model: str) -> None:
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(read, model))

    def render(self) -> bytes:
        return generate_latest(self._registry)


def mock_values(stats: Counter[str], in_flight: int) -> list[Value]:
    """vLLM-named counts the mocks know (they have no KV cache to report)."""
    return [
        Value("gauge", "vllm:num_requests_running", "Requests in flight.", in_flight),
        Value("gauge", "vllm:num_requests_waiting", "Requests queued (none).", 0),
        Value(
            "counter",
            "vllm:prompt_tokens",
            "Prompt words received.",
            stats["prompt_tokens"],
        ),
        Value("counter", "vllm:generation_tokens", "Tokens sent.", stats["tokens"]),
        Value(
            "counter", "vllm:request_success", "Requests completed.", stats["completed"]
        ),
    ]
