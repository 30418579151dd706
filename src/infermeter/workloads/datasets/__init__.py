"""Datasets as QuerySampleLibraries: MLPerf formats, custom files, synthetic."""

from __future__ import annotations

from infermeter.workloads.datasets.base import DatasetQSL, Sample, SampleSource
from infermeter.workloads.datasets.factory import FORMATS, DatasetOptions, build_qsl
from infermeter.workloads.datasets.lengths import LengthSpec, parse_length
from infermeter.workloads.datasets.tokenizer import Tokenizer, load_tokenizer

__all__ = [
    "FORMATS",
    "DatasetOptions",
    "DatasetQSL",
    "LengthSpec",
    "Sample",
    "SampleSource",
    "Tokenizer",
    "build_qsl",
    "load_tokenizer",
    "parse_length",
]
