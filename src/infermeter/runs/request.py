"""What ``infermeter run`` is asked for: one plain dataclass, read by every part of a run.

Below ``run`` (which executes it), ``rundir`` (which names its folder) and
``sim_endpoint`` (which fills in the simulated endpoint's defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infermeter.loadgen.settings import Mode, Scenario
from infermeter.workloads.datasets.factory import DatasetOptions


@dataclass
class RunRequest:
    """Everything ``infermeter run`` was asked for."""

    benchmark: str = "llama2-70b"
    scenario: Scenario = Scenario.SERVER
    mode: Mode = Mode.PERFORMANCE_ONLY
    sut: str = "sim"  # a simulated 8x H100 endpoint on loopback (runs/sim_endpoint.py)
    sut_options: dict[str, str] = field(default_factory=dict)
    user_conf: Path | None = None
    target_qps: float | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    dataset: Path | None = None
    dataset_format: str | None = None
    dataset_options: DatasetOptions = field(default_factory=DatasetOptions)
    total_sample_count: int | None = None
    output_dir: Path | None = None
    trace: bool = False
    store: Path | None = None
    index: bool = True
    engine: str = "native"  # or "mlcommons": the official LoadGen wheel
    # Prometheus /metrics to scrape: None = each endpoint's own, [] = none.
    metrics_urls: list[str] | None = None
    metrics_interval_s: float = 1.0
    preflight: bool = True  # check an openai endpoint before sending load
    audit_config: Path | None = None  # an MLPerf audit.config, applied last
    force: bool = False  # replace a run already in output_dir
