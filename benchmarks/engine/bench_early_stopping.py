"""Time the early-stopping estimate and the conf reader (cold caches).

Run: .venv/bin/python benchmarks/engine/bench_early_stopping.py
"""

from __future__ import annotations

import time

import numpy as np

from infermeter.loadgen import early_stopping as es
from infermeter.loadgen.conf import (
    default_mlperf_conf_text,
    load_conf_text,
    settings_from_confs,
)
from infermeter.loadgen.settings import Scenario

CASES = [(463_206, 0.90), (270_336, 0.99), (3_000_000, 0.99), (10_000_000, 0.90)]


def time_estimate(n: int, p: float) -> tuple[float, int]:
    es._h_min.cache_clear()  # cold: no h_min value cached yet
    latencies = np.arange(n, dtype=np.int64)
    start = time.perf_counter()
    estimate = es.stream_estimate(latencies, p)
    return time.perf_counter() - start, estimate.t


def time_conf(repeats: int = 50) -> float:
    text = default_mlperf_conf_text()
    start = time.perf_counter()
    for _ in range(repeats):
        load_conf_text(text, "mlperf.conf")
    return (time.perf_counter() - start) / repeats


def main() -> None:
    for n, p in CASES:
        seconds, t = time_estimate(n, p)
        print(f"stream_estimate n={n:>10,} p={p}: t={t:>7,}  {seconds * 1e3:8.1f} ms")
    print(f"parse embedded mlperf.conf: {time_conf() * 1e3:.2f} ms")
    start = time.perf_counter()
    settings_from_confs("llama2-70b", Scenario.SERVER)
    print(
        f"settings_from_confs (first call): {(time.perf_counter() - start) * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
