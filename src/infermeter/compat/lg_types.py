"""The plain data types of the ``mlperf_loadgen`` API: enums, samples, responses, log settings.

Pure-Python classes with ``__slots__``: same names, constructors, fields and
defaults as the official pybind11 classes, and about five times cheaper to make.
"""

from __future__ import annotations

import ctypes
import enum
from typing import Any


class TestScenario(enum.IntEnum):
    """LoadGen scenarios, with the official integer values."""

    SingleStream = 0
    MultiStream = 1
    Server = 2
    Offline = 3


class TestMode(enum.IntEnum):
    """LoadGen test modes, with the official integer values."""

    SubmissionRun = 0
    AccuracyOnly = 1
    PerformanceOnly = 2
    FindPeakPerformance = 3


class LoggingMode(enum.IntEnum):
    """Accepted for compatibility; logs are always written at the end of the test."""

    AsyncPoll = 0
    EndOfTestOnly = 1
    Synchronous = 2


class QuerySample:
    """One sample of a query: ``id`` (opaque, never 0) and ``index`` (into the QSL)."""

    __slots__ = ("id", "index")

    def __init__(self, id: int = 0, index: int = 0) -> None:
        self.id = id
        self.index = index

    def __repr__(self) -> str:
        return f"QuerySample(id={self.id}, index={self.index})"


class QuerySampleResponse:
    """A finished sample: ``data`` is an address (int) with ``size`` bytes, or any buffer.

    With a buffer (bytes, bytearray, memoryview, numpy array...) ``size`` may be
    left out. The bytes are read only for samples that go to the accuracy log,
    before ``QuerySamplesComplete`` returns, so the buffer must live until then.
    """

    __slots__ = ("data", "id", "n_tokens", "size")

    def __init__(
        self,
        id: int = 0,
        data: Any = 0,
        size: int | None = None,
        n_tokens: int = 0,
    ) -> None:
        self.id = id
        self.data = data
        self.size = size
        self.n_tokens = n_tokens

    def payload(self) -> bytes:
        """The response bytes (copied now)."""
        data, size = self.data, self.size
        if isinstance(data, int):
            if not size:
                return b""
            if data == 0:
                raise ValueError(
                    f"QuerySampleResponse(id={self.id}) has size {size} but address 0; "
                    "pass the buffer's address (array.buffer_info()[0]) or the buffer"
                )
            return ctypes.string_at(data, size)
        raw = memoryview(data).cast("B")
        return bytes(raw if size is None else raw[:size])

    def __repr__(self) -> str:
        return (
            f"QuerySampleResponse(id={self.id}, data={self.data!r}, size={self.size}, "
            f"n_tokens={self.n_tokens})"
        )


class LogOutputSettings:
    """Where the log files go (official names and defaults)."""

    __slots__ = (
        "copy_detail_to_stdout",
        "copy_summary_to_stdout",
        "outdir",
        "prefix",
        "prefix_with_datetime",
        "suffix",
    )

    def __init__(self) -> None:
        self.outdir = "."
        self.prefix = "mlperf_log_"
        self.suffix = ""
        self.prefix_with_datetime = False
        self.copy_detail_to_stdout = False
        self.copy_summary_to_stdout = False


class LogSettings:
    """Log settings (official defaults: trace ON, as LoadGen; it can reach hundreds of MB)."""

    __slots__ = (
        "enable_trace",
        "log_mode",
        "log_mode_async_poll_interval_ms",
        "log_output",
    )

    def __init__(self) -> None:
        self.log_output = LogOutputSettings()
        self.log_mode = LoggingMode.AsyncPoll
        self.log_mode_async_poll_interval_ms = 1000
        self.enable_trace = True


# The official module exports these pybind11 vector types; plain lists work everywhere.
VectorQuerySample = list
VectorQuerySampleResponse = list
