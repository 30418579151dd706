"""Verify an audit run and write what the official ``run_verification.py`` scripts write.

Into ``OUTPUT/TESTxx/``: ``verify_accuracy.txt`` (TEST01, TEST06),
``verify_performance.txt`` (TEST01, TEST04), ``accuracy/mlperf_log_accuracy.json``
(TEST01, TEST06) and ``performance/run_1/`` with the audit run's summary and
detail logs (TEST01, TEST04): the submission layout the checker reads.
``RESULTS`` is the reference results folder (``accuracy/`` and
``performance/run_1/``), ``COMPLIANCE`` the audit run's log folder.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from infermeter.errors import ConfigError
from infermeter.runs.compliance.configs import parse_test
from infermeter.runs.compliance.verify import (
    Verification,
    check_test01_accuracy,
    check_test01_performance,
    check_test04_performance,
    check_test06_accuracy,
    first_values,
)

ACCURACY_LOG = "mlperf_log_accuracy.json"
SUMMARY = "mlperf_log_summary.txt"
DETAIL = "mlperf_log_detail.txt"


@dataclass
class ComplianceResult:
    """The verdict of one audit test and the files written for the submission."""

    test: str
    checks: dict[str, Verification] = field(default_factory=dict)
    folder: Path | None = None
    files: list[Path] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks.values())

    def to_dict(self) -> dict[str, object]:
        return {
            "test": self.test,
            "passed": self.passed,
            "checks": {
                name: {
                    "passed": c.passed,
                    "lines": list(c.lines),
                    "notes": list(c.notes),
                }
                for name, c in self.checks.items()
            },
            "folder": str(self.folder) if self.folder else None,
            "files": [str(p) for p in self.files],
        }


def verify(
    test: str,
    *,
    compliance_dir: Path,
    output_dir: Path,
    results_dir: Path | None = None,
    dtype: str | None = None,
    scenario: str | None = None,
    eos_id: int = 2,
) -> ComplianceResult:
    """Check ``compliance_dir``'s logs as ``test`` prescribes; write ``output_dir/TESTxx``."""
    test = parse_test(test)
    result = ComplianceResult(test, folder=output_dir / test)
    if test in ("TEST01", "TEST04") and results_dir is None:
        raise ConfigError(f"{test} compares with reference runs; pass --results-dir")
    reference = results_dir or compliance_dir
    if test == "TEST01":
        result.checks["accuracy"] = check_test01_accuracy(
            _need(reference / "accuracy" / ACCURACY_LOG),
            _need(compliance_dir / ACCURACY_LOG),
            dtype=dtype or "byte",
        )
        result.checks["performance"] = check_test01_performance(
            _need(reference / "performance" / "run_1" / DETAIL),
            _need(compliance_dir / DETAIL),
        )
    elif test == "TEST04":
        result.checks["performance"] = check_test04_performance(
            _need(reference / "performance" / "run_1" / SUMMARY),
            _need(compliance_dir / SUMMARY),
        )
    else:
        result.checks["accuracy"] = check_test06_accuracy(
            _need(compliance_dir / ACCURACY_LOG),
            scenario=scenario or _scenario(compliance_dir),
            dtype=dtype or _response_dtype(compliance_dir),
            eos_id=eos_id,
        )
    result.files = _write(result, compliance_dir)
    return result


def _need(path: Path) -> Path:
    if not path.is_file():
        raise ConfigError(
            f"{path} not found; the results folder needs accuracy/{ACCURACY_LOG} "
            f"and performance/run_1/ logs, the compliance folder the audit run's logs"
        )
    return path


def _scenario(compliance_dir: Path) -> str:
    values, _ = first_values(_need(compliance_dir / DETAIL))
    return str(values.get("effective_scenario", ""))


def _response_dtype(compliance_dir: Path) -> str:
    """The benchmark's token dtype when run.json names it, else the script's int64."""
    run_json = compliance_dir / "run.json"
    if run_json.is_file():
        from infermeter.workloads.registry import get_benchmark

        name = json.loads(run_json.read_text()).get("benchmark")
        try:
            return get_benchmark(str(name)).response_dtype
        except ConfigError:
            pass
    return "int64"


def _write(result: ComplianceResult, compliance_dir: Path) -> list[Path]:
    assert result.folder is not None
    out = result.folder
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, check in result.checks.items():
        path = out / f"verify_{name}.txt"
        path.write_text(check.text())
        written.append(path)
    if "accuracy" in result.checks:
        written.append(_copy(compliance_dir / ACCURACY_LOG, out / "accuracy"))
    if "performance" in result.checks:
        for name in (SUMMARY, DETAIL):
            written.append(_copy(compliance_dir / name, out / "performance" / "run_1"))
    return written


def _copy(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(source, folder / source.name))
