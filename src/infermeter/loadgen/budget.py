"""Memory a run phase will need, checked before anything is allocated.

A rate or duration far beyond the machine (``--target-qps 1e9``) is refused
in milliseconds with the rate and duration that would fit, instead of
allocating for a minute and dying of ``MemoryError``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from infermeter.errors import ConfigError
from infermeter.loadgen.schedule import planned_size
from infermeter.loadgen.settings import EffectiveSettings, Mode, Scenario

# Peak bytes per query and per sample of a phase (docs/design.md, "Memory"):
# schedule times, latency origins and the Poisson growth slack per query;
# sample indices, their draws, the records and the summary's latency copy
# per sample; token runs add first-token times and counts.
BYTES_PER_QUERY = 32
BYTES_PER_SAMPLE = 64
BYTES_PER_TOKEN_SAMPLE = 12
SHARE = 0.5  # of the memory available now


def phase_bytes(settings: EffectiveSettings) -> tuple[int, int]:
    """(estimated peak bytes, samples) of the performance phase of ``settings``."""
    if settings.mode is Mode.ACCURACY_ONLY:
        return 0, 0  # sized by the dataset, which is already in memory
    set_len = max(1, settings.performance_sample_count)
    queries, samples = planned_size(settings, set_len)
    per_sample = BYTES_PER_SAMPLE + (
        BYTES_PER_TOKEN_SAMPLE if settings.is_token_run else 0
    )
    return queries * BYTES_PER_QUERY + samples * per_sample, samples


def available_bytes() -> int | None:
    """Memory available to this process now (MemAvailable, capped by a cgroup limit)."""
    found = _meminfo_available()
    limit = _cgroup_room()
    if found is None:
        return limit
    return found if limit is None else min(found, limit)


def check_phase_memory(settings: EffectiveSettings) -> None:
    """ConfigError naming a rate or duration that fits when the phase cannot."""
    available = available_bytes()
    if available is None:
        return
    need, samples = phase_bytes(settings)
    budget = int(available * SHARE)
    if need <= budget:
        return
    raise ConfigError(
        f"this run would schedule {samples:,} samples ({_load(settings)}), about "
        f"{_gib(need)} of memory, more than half of the {_gib(available)} "
        f"available; lower the load to fit, e.g. "
        + " or ".join(_advice(settings, budget / need, int(samples * budget / need)))
    )


def _load(settings: EffectiveSettings) -> str:
    seconds = max(settings.requested.min_duration_ms, 0) / 1000
    return f"{settings.target_qps:g} QPS for {seconds:g} s"


def _advice(settings: EffectiveSettings, fits: float, room: int) -> list[str]:
    """Flags that bring the phase within budget; ``room``: samples that fit."""
    r = settings.requested
    seconds = r.min_duration_ms / 1000
    options = []
    if settings.scenario in (Scenario.SERVER, Scenario.OFFLINE):
        options.append(f"--target-qps {_round_down(settings.target_qps * fits)}")
    if seconds > 0:
        options.append(f"--min-duration {_round_down(seconds * fits)}s")
    offline = settings.scenario is Scenario.OFFLINE
    per_query = 1 if offline else settings.samples_per_query
    if r.min_query_count * per_query * fits * 2 > room or not options:
        # The minimum query count alone is too much: no rate or duration helps.
        fitting = int(r.min_query_count * fits)
        options = [f"--min-query-count {fitting}"]
    return options


def _round_down(value: float) -> str:
    """Two significant digits, rounded down so that the advice surely fits."""
    if value <= 0:
        return "0"
    exponent = math.floor(math.log10(value)) - 1
    rounded = math.floor(value / 10.0**exponent) * 10.0**exponent
    return f"{rounded:.{max(0, -exponent)}f}"


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_room() -> int | None:
    """Room left under a cgroup v2 memory limit (containers), if there is one."""
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int((base / "memory.current").read_text().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None
