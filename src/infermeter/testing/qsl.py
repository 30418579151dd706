"""``InMemoryQSL``: a QuerySampleLibrary of n samples that records load/unload calls."""

from __future__ import annotations

import numpy as np

from infermeter.loadgen.interfaces import IndexArray


class InMemoryQSL:
    """n samples, nothing to load; remembers what was loaded (for tests)."""

    def __init__(
        self, total: int, performance: int | None = None, *, name: str = "InMemoryQSL"
    ) -> None:
        self.name = name
        self.total_sample_count = total
        self.performance_sample_count = (
            performance if performance is not None else total
        )
        self.loaded: list[list[int]] = []
        self.unloaded: list[list[int]] = []

    def load_samples(self, indices: IndexArray) -> None:
        self.loaded.append(np.asarray(indices).tolist())

    def unload_samples(self, indices: IndexArray) -> None:
        self.unloaded.append(np.asarray(indices).tolist())
