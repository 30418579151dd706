"""Workloads: MLPerf benchmarks as data, their datasets and accuracy metrics."""

from __future__ import annotations

from infermeter.workloads.benchmark import AccuracyTarget, Benchmark
from infermeter.workloads.registry import (
    get_benchmark,
    list_benchmarks,
    load_benchmarks_file,
)

__all__ = [
    "AccuracyTarget",
    "Benchmark",
    "get_benchmark",
    "list_benchmarks",
    "load_benchmarks_file",
]
