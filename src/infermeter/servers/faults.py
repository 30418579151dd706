"""Fault injection for the mock server: which fault (if any) hits each request.

Each request draws at most one fault from a seeded generator, in arrival
order, so a fault run is reproducible and the counts are known.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

import numpy as np

from infermeter.errors import ConfigError


class Fault(enum.Enum):
    """What goes wrong with one request."""

    NONE = "none"
    ERROR = "error"  # HTTP 500 with an OpenAI error body
    RESET = "reset"  # connection dropped mid-stream
    STALL = "stall"  # stream stops sending, connection kept open
    MALFORMED = "malformed"  # a chunk that is not JSON
    SLOW_FIRST_BYTE = "slow_first_byte"  # headers only after a delay, then normal


@dataclass(frozen=True, slots=True)
class FaultConfig:
    """Per-request probability of each fault; their sum must not exceed 1."""

    error_rate: float = 0.0
    reset_rate: float = 0.0
    stall_rate: float = 0.0
    malformed_rate: float = 0.0
    slow_first_byte_rate: float = 0.0
    slow_first_byte_s: float = 0.5
    stall_s: float = 3600.0
    # Tokens sent before a reset, a stall or a malformed chunk.
    after_tokens: int = 1
    error_status: int = 500

    def rates(self) -> dict[Fault, float]:
        return {
            Fault.ERROR: self.error_rate,
            Fault.RESET: self.reset_rate,
            Fault.STALL: self.stall_rate,
            Fault.MALFORMED: self.malformed_rate,
            Fault.SLOW_FIRST_BYTE: self.slow_first_byte_rate,
        }

    def validate(self) -> None:
        rates = self.rates()
        bad = {f.value: r for f, r in rates.items() if not 0.0 <= r <= 1.0}
        if bad:
            raise ConfigError(f"Fault rates must be in [0, 1] (got {bad})")
        total = sum(rates.values())
        if total > 1.0 + 1e-9:
            raise ConfigError(
                f"Fault rates add up to {total:g} > 1; lower some of them"
            )


class FaultPicker:
    """Draws the fault of each request (thread-safe)."""

    def __init__(self, config: FaultConfig, seed: int = 0) -> None:
        config.validate()
        rates = config.rates()
        self._faults = [Fault.NONE, *rates]
        self._bounds = np.cumsum(list(rates.values()))
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def pick(self) -> Fault:
        with self._lock:
            u = float(self._rng.random())
        slot = int(np.searchsorted(self._bounds, u, side="right"))
        return Fault.NONE if slot >= len(self._bounds) else self._faults[slot + 1]
