"""Energy: power sampled during a run (NVML, RAPL) and tokens per joule.

``PowerSampler`` reads cumulative energy counters in a background thread and
summarises them for run.json (``"power"``). Sources: NVIDIA GPUs through the
optional nvidia-ml-py (``pynvml``), CPU packages through RAPL in
``/sys/class/powercap`` where readable. Figures from them are derived.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

POWERCAP = Path("/sys/class/powercap")
MIN_WINDOW_S = 1.0


class PowerSource(Protocol):
    """A cumulative energy counter in joules (wrap-arounds handled by the source)."""

    name: str

    def read_energy_j(self) -> float: ...


class RaplSource:
    """One RAPL zone (``intel-rapl:N``); the counter wraps at max_energy_range_uj."""

    def __init__(self, zone: Path) -> None:
        self.zone = zone
        label = (zone / "name").read_text().strip() if (zone / "name").exists() else ""
        self.name = f"rapl:{zone.name}:{label}" if label else f"rapl:{zone.name}"
        self._range = float((zone / "max_energy_range_uj").read_text())
        self._last = self._raw()
        self._total = 0.0

    def _raw(self) -> float:
        return float((self.zone / "energy_uj").read_text())

    def read_energy_j(self) -> float:
        raw = self._raw()
        step = raw - self._last if raw >= self._last else raw + self._range - self._last
        self._last, self._total = raw, self._total + step
        return self._total / 1e6


class NvmlSource:
    """One NVIDIA GPU via NVML: total energy (mJ) where supported, else power x time."""

    def __init__(self, index: int, nvml: Any, clock: Callable[[], float]) -> None:
        self._nvml, self._clock = nvml, clock
        self._handle = nvml.nvmlDeviceGetHandleByIndex(index)
        raw_name = nvml.nvmlDeviceGetName(self._handle)
        name = raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)
        self.name = f"nvml:{index}:{name}"
        self._integrated, self._last_t = 0.0, clock()
        try:
            self._start = float(nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
            self._counter = True
        except nvml.NVMLError:
            self._counter = False

    def read_energy_j(self) -> float:
        if self._counter:
            now = float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
            return (now - self._start) / 1e3
        watts = self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1e3
        t = self._clock()
        self._integrated += watts * (t - self._last_t)
        self._last_t = t
        return self._integrated


def rapl_sources(root: Path = POWERCAP) -> list[PowerSource]:
    """Top-level RAPL packages only (sub-zones are already inside them)."""
    sources: list[PowerSource] = []
    for zone in sorted(root.glob("intel-rapl:*")):
        if zone.name.count(":") != 1:
            continue
        try:
            sources.append(RaplSource(zone))
        except (OSError, ValueError):  # unreadable without privileges: skip
            continue
    return sources


def nvml_sources(clock: Callable[[], float] = time.monotonic) -> list[PowerSource]:
    """Every GPU NVML sees; empty when nvidia-ml-py or the driver is missing."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        return [NvmlSource(i, pynvml, clock) for i in range(count)]
    except pynvml.NVMLError:
        return []


def detect_sources() -> list[PowerSource]:
    return [*nvml_sources(), *rapl_sources()]


class PowerSampler:
    """Sample energy counters every ``interval_s``; ``stop()`` returns the summary."""

    def __init__(
        self,
        sources: Sequence[PowerSource] | None = None,
        *,
        interval_s: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sources = list(detect_sources() if sources is None else sources)
        self.interval_s = interval_s
        self._clock = clock
        self._times: list[float] = []
        self._energy: list[list[float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        """Take one reading of every source (the thread calls this)."""
        self._times.append(self._clock())
        self._energy.append([s.read_energy_j() for s in self.sources])

    def start(self) -> PowerSampler:
        self.sample()
        if self.sources:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
        return self.summary()

    def _window_watts(self, totals: list[float]) -> list[float]:
        """Power over windows of at least ``MIN_WINDOW_S``.

        Energy counters tick coarsely (NVML every few tens of ms), so power
        over one short interval overshoots: on an H200 capped at 700 W, 0.1 s
        windows gave 1,364 W. Windows of a second or more do not.
        """
        watts, anchor = list[float](), 0
        for i in range(1, len(totals)):
            span = self._times[i] - self._times[anchor]
            if span >= MIN_WINDOW_S or (
                i == len(totals) - 1 and not watts and span > 0
            ):
                watts.append((totals[i] - totals[anchor]) / span)
                anchor = i
        return watts

    def summary(self) -> dict[str, Any]:
        """What run.json keeps: totals and per-source energy, mean/max power."""
        if not self.sources or len(self._times) < 2:
            return {"sources": [], "available": False}
        duration = self._times[-1] - self._times[0]
        totals = [sum(row) for row in self._energy]
        watts = self._window_watts(totals)
        energy = totals[-1] - totals[0]
        per_source = {
            s.name: round(self._energy[-1][i] - self._energy[0][i], 6)
            for i, s in enumerate(self.sources)
        }
        return {
            "available": True,
            "sources": [s.name for s in self.sources],
            "interval_s": self.interval_s,
            "samples": len(self._times),
            "duration_s": duration,
            "energy_j": energy,
            "mean_w": energy / duration if duration > 0 else None,
            "max_w": max(watts) if watts else None,
            "min_w": min(watts) if watts else None,
            "energy_j_per_source": per_source,
        }


def tokens_per_joule(throughput_per_s: float, watts: float | None) -> float | None:
    """Derived: throughput (tokens or samples per second) per watt = per joule."""
    if not watts or watts <= 0:
        return None
    return throughput_per_s / watts


def run_tokens_per_joule(meta: dict[str, Any]) -> float | None:
    """From run.json: tokens (or samples) per joule of the sampled power."""
    power = meta.get("power")
    metrics = meta.get("metrics") or {}
    if not isinstance(power, dict) or not power.get("mean_w"):
        return None
    rate = metrics.get("tokens_per_second") or metrics.get("samples_per_second")
    return tokens_per_joule(float(rate), float(power["mean_w"])) if rate else None
