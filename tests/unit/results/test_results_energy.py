"""Energy: RAPL counters (a fake powercap tree), the sampler, tokens per joule."""

from __future__ import annotations

from pathlib import Path

import pytest

from infermeter.results.energy import (
    NvmlSource,
    PowerSampler,
    RaplSource,
    rapl_sources,
    run_tokens_per_joule,
    tokens_per_joule,
)
from infermeter.results.headline import headline_results


def _zone(root: Path, name: str, energy_uj: int, range_uj: int = 1_000_000_000):
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{range_uj}\n")
    return zone


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_rapl_sources_take_packages_not_subzones(tmp_path):
    _zone(tmp_path, "intel-rapl:0", 0)
    _zone(tmp_path, "intel-rapl:0:0", 0)
    _zone(tmp_path, "intel-rapl:1", 0)
    names = [s.name for s in rapl_sources(tmp_path)]
    assert names == ["rapl:intel-rapl:0:package-0", "rapl:intel-rapl:1:package-0"]


def test_rapl_counter_wraps(tmp_path):
    zone = _zone(tmp_path, "intel-rapl:0", 900, range_uj=1000)
    source = RaplSource(zone)
    (zone / "energy_uj").write_text("100")  # wrapped: 100 uJ + 200 uJ
    assert source.read_energy_j() == pytest.approx(200e-6)


def test_sampler_summary_from_counters(tmp_path):
    zone = _zone(tmp_path, "intel-rapl:0", 0)
    clock = FakeClock()
    sampler = PowerSampler([RaplSource(zone)], clock=clock)
    sampler.sample()
    for second, joules in ((1, 100), (2, 250), (3, 300)):
        clock.t = second
        (zone / "energy_uj").write_text(str(joules * 1_000_000))
        sampler.sample()
    summary = sampler.summary()
    assert summary["energy_j"] == pytest.approx(300)
    assert summary["mean_w"] == pytest.approx(100)
    assert (summary["max_w"], summary["min_w"]) == (
        pytest.approx(150),
        pytest.approx(50),
    )
    assert summary["samples"] == 4 and summary["available"]


def test_sampler_thread_runs_and_stops(tmp_path):
    zone = _zone(tmp_path, "intel-rapl:0", 0)
    sampler = PowerSampler([RaplSource(zone)], interval_s=0.01).start()
    summary = sampler.stop()
    assert summary["samples"] >= 2 and summary["sources"]


def test_no_sources_is_reported_not_raised():
    assert PowerSampler([]).start().stop() == {"sources": [], "available": False}


def test_tokens_per_joule_published_and_measured():
    maxq = next(
        r
        for r in headline_results()
        if (r.result_id, r.scenario) == ("v4.1-0049", "Offline")
    )
    # 25,262.1 tok/s at 6,152.98 W -> 4.11 tok/J (spec 1.4, computed)
    assert round(maxq.per_joule, 2) == 4.11
    assert tokens_per_joule(1000.0, 0) is None
    meta = {"metrics": {"tokens_per_second": 500.0}, "power": {"mean_w": 250.0}}
    assert run_tokens_per_joule(meta) == 2.0
    assert run_tokens_per_joule({"metrics": {}}) is None


class FakeNvml:
    """The few pynvml calls NvmlSource makes; counter=False mimics pre-Volta GPUs."""

    class NVMLError(Exception):
        pass

    def __init__(self, counter: bool) -> None:
        self.counter, self.energy_mj, self.power_mw = counter, 5_000.0, 300_000

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.counter:
            raise self.NVMLError("not supported")
        return self.energy_mj

    def nvmlDeviceGetPowerUsage(self, handle):
        return self.power_mw


def test_nvml_energy_counter_and_power_fallback():
    clock = FakeClock()
    nvml = FakeNvml(counter=True)
    source = NvmlSource(0, nvml, clock)
    assert source.name == "nvml:0:NVIDIA H100 80GB HBM3"
    nvml.energy_mj += 2_000
    assert source.read_energy_j() == pytest.approx(2.0)
    old = NvmlSource(1, FakeNvml(counter=False), clock)
    clock.t = 2.0
    assert old.read_energy_j() == pytest.approx(600.0)  # 300 W for 2 s


class TickingCounter:
    """A counter that ticks 30 J every 0.3 s (a steady 100 W), read more often."""

    name = "ticking"

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def read_energy_j(self) -> float:
        return 30.0 * int(round(self.clock.t, 6) / 0.3)


def test_coarse_counters_do_not_inflate_max_power():
    clock = FakeClock()
    sampler = PowerSampler([TickingCounter(clock)], interval_s=0.1, clock=clock)
    for step in range(31):
        clock.t = step / 10
        sampler.sample()
    summary = sampler.summary()
    assert summary["mean_w"] == pytest.approx(100.0)
    assert 80.0 <= summary["min_w"] <= summary["max_w"] <= 120.0  # 0.1 s: 300 W
