"""Incremental simulator for endpoints: requests arrive one by one, each gets token times.

``submit`` simulates the requests still in flight at the new arrival plus the
new one, from their own arrival times, and returns the new request's timing;
earlier requests keep the timings they were already given. Tokens between the
first and the last are spaced evenly (the simulator resolves TTFT and
completion; TPOT is their mean gap).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import IntArray, make_requests
from infermeter.perfmodel.simulator import ServingConfig, simulate
from infermeter.perfmodel.systems import build_system


@dataclass(frozen=True, slots=True)
class TokenTiming:
    """When each output token of one request is due (ns, same origin as the arrival)."""

    arrival_ns: int
    first_token_ns: int
    completed_ns: int
    n_tokens: int

    @property
    def token_ns(self) -> IntArray:
        """Due time of every output token; the last one is the completion."""
        if self.n_tokens == 1:
            return np.asarray([self.completed_ns], dtype=np.int64)
        return np.linspace(
            self.first_token_ns, self.completed_ns, self.n_tokens
        ).astype(np.int64)


class OnlineSimulator:
    """Thread-safe, for an HTTP server: one instance per simulated system."""

    def __init__(self, config: ServingConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        # In-flight requests: (arrival, isl, osl, completion).
        self._live: list[tuple[int, int, int, int]] = []

    @classmethod
    def for_system(
        cls,
        accelerator: str,
        count: int,
        model: str,
        *,
        precision: str | None = None,
        tp: int | None = None,
    ) -> OnlineSimulator:
        """Calibrated system from names, e.g. ``("h100-sxm", 8, "llama2-70b")``."""
        return cls(build_system(accelerator, count, model, precision=precision, tp=tp))

    def submit(self, arrival_ns: int, isl: int, osl: int) -> TokenTiming:
        """Timing of a new request arriving at ``arrival_ns`` (ascending order)."""
        if isl < 1 or osl < 1:
            raise ConfigError(
                f"A request needs >= 1 input and output token (got {isl}, {osl})."
            )
        with self._lock:
            if self._live and arrival_ns < self._live[-1][0]:
                raise ConfigError("Requests must be submitted in arrival order.")
            self._live = [r for r in self._live if r[3] > arrival_ns]
            rows = [*self._live, (arrival_ns, isl, osl, 0)]
            req = make_requests(
                np.asarray([r[0] for r in rows], dtype=np.int64),
                np.asarray([r[1] for r in rows], dtype=np.int64),
                np.asarray([r[2] for r in rows], dtype=np.int64),
            )
            res = simulate(self.config, req)
            first, done = int(res.first_token_ns[-1]), int(res.completed_ns[-1])
            self._live.append((arrival_ns, isl, osl, done))
        return TokenTiming(arrival_ns, first, done, osl)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._live)
