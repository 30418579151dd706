"""Run an MLPerf audit test end to end: reference runs, the audit run, the verification.

``run_audit("TEST01", request)`` runs, with the same SUT, dataset and
settings: the accuracy-mode reference (TEST01), the performance reference
(TEST01, TEST04) and the audit run with the test's audit.config applied last,
then verifies them. The folder it fills (``request.output_dir``) is the
``<benchmark>/<scenario>`` results folder of an MLPerf submission::

    accuracy/            the accuracy reference's logs            (TEST01)
    performance/run_1/   the performance reference's logs         (TEST01, TEST04)
    TEST01/              verify_*.txt, accuracy/, performance/run_1/
    runs/                infermeter's run folders (run.json, records.npz) and
                         the audit.config used: not part of a submission
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from infermeter.errors import ConfigError
from infermeter.loadgen.settings import Mode
from infermeter.runs.compliance.configs import audit_config_text, parse_test
from infermeter.runs.compliance.layout import (
    ACCURACY_LOG,
    DETAIL,
    SUMMARY,
    ComplianceResult,
    verify,
)
from infermeter.runs.request import RunRequest
from infermeter.runs.run import RunReport, execute
from infermeter.runs.rundir import default_run_dir, new_run_id
from infermeter.workloads.registry import get_benchmark

RunOne = Callable[[RunRequest], RunReport]


@dataclass
class AuditReport:
    """The verification and the runs it compared."""

    result: ComplianceResult
    folder: Path
    audit_config: Path
    runs: dict[str, RunReport] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.result.passed


# SUTs whose accuracy log holds answer text, not token ids.
TEXT_SUTS = ("openai",)


def run_audit(
    test: str,
    request: RunRequest,
    *,
    run_one: RunOne = execute,
    audit_config: Path | None = None,
    on_step: Callable[[str], None] | None = None,
) -> AuditReport:
    """Reference runs, the audit run and the verification of ``test``."""
    test = parse_test(test)
    _refuse_text_answers(test, request)
    folder = request.output_dir or _default_folder(request, test)
    runs = folder / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    config = _audit_config(test, request, runs, audit_config)
    report = AuditReport(ComplianceResult(test), folder, config)

    def step(name: str, mode: Mode, config_path: Path | None) -> RunReport:
        if on_step is not None:
            on_step(f"{test}: {name} run")
        one = dataclasses.replace(
            request, mode=mode, output_dir=runs / name, audit_config=config_path
        )
        report.runs[name] = run_one(one)
        return report.runs[name]

    if test == "TEST01":
        accuracy = step("accuracy", Mode.ACCURACY_ONLY, None)
        _publish(accuracy.folder, folder / "accuracy", (ACCURACY_LOG, SUMMARY, DETAIL))
    if test in ("TEST01", "TEST04"):
        performance = step("performance", Mode.PERFORMANCE_ONLY, None)
        _publish(
            performance.folder, folder / "performance" / "run_1", (SUMMARY, DETAIL)
        )
    audit = step(test, Mode.PERFORMANCE_ONLY, config)
    report.result = verify(
        test,
        compliance_dir=audit.folder,
        output_dir=folder,
        results_dir=folder,
        scenario=request.scenario.value,
        eos_id=int(request.sut_options.get("eos", 2)),
    )
    (runs / f"{test}.json").write_text(
        json.dumps(report.result.to_dict(), indent=2) + "\n"
    )
    return report


def _default_folder(request: RunRequest, test: str) -> Path:
    base = default_run_dir(new_run_id(request.benchmark, request.scenario.value))
    return base.with_name(f"{base.name}_{test}")


def _audit_config(
    test: str, request: RunRequest, runs: Path, given: Path | None
) -> Path:
    """The audit.config the audit run uses: the one given, else the test's own."""
    path = runs / f"{test}-audit.config"
    if given is not None:
        shutil.copyfile(given, path)
        return path
    name = request.benchmark.removesuffix("-interactive")
    conf_model = get_benchmark(name).conf_model
    path.write_text(audit_config_text(test, conf_model))
    return path


def _publish(source: Path, target: Path, names: tuple[str, ...]) -> None:
    """Copy a run's MLPerf logs where the submission layout wants them."""
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy2(source / name, target / name)


def _refuse_text_answers(test: str, request: RunRequest) -> None:
    """TEST06 reads the logged answers as int32 token ids: text read that way is
    noise that passes or fails by chance (``tok `` is 4 bytes, one "id")."""
    if test == "TEST06" and request.sut in TEXT_SUTS:
        raise ConfigError(
            f"TEST06 checks token ids, but the {request.sut} SUT logs answer text; "
            "run TEST01 or TEST04 against it, or TEST06 with a SUT that returns "
            "token ids (--sut torch_llm)"
        )
