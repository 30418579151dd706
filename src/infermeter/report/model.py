"""What the report reads: a run folder's meta and records, typed structurally.

The report layer does not import the results layer; ``RunFolder`` of
``infermeter.results.runfolder`` satisfies these protocols.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


class RecordsLike(Protocol):
    """The per-sample arrays of records.npz."""

    @property
    def scheduled_ns(self) -> I64: ...
    @property
    def issued_ns(self) -> I64: ...
    @property
    def completed_ns(self) -> I64: ...
    @property
    def n_tokens(self) -> I64: ...
    @property
    def status(self) -> npt.NDArray[np.uint8]: ...
    @property
    def status_reasons(self) -> tuple[str, ...]: ...
    @property
    def ok(self) -> npt.NDArray[np.bool_]: ...

    def latency_ns(self) -> I64: ...
    def ttft_ns(self) -> I64: ...
    def tpot_ns(self) -> npt.NDArray[np.float64]: ...


class RunLike(Protocol):
    """A run folder: its path, run.json and records."""

    @property
    def path(self) -> Path: ...
    @property
    def meta(self) -> dict[str, Any]: ...
    @property
    def run_id(self) -> str: ...
    @property
    def records(self) -> RecordsLike: ...
