"""The LoadGen engine: MLPerf scenarios, schedules, verdicts and log files (stdlib + numpy).

Entry points: ``run_test`` (a whole test in any mode) and ``write_logs``.
"""

from __future__ import annotations

from infermeter.loadgen.interfaces import (
    CompletionSink,
    QueryBatch,
    QuerySampleLibrary,
    SystemUnderTest,
)
from infermeter.loadgen.logs.files import LogOutput, write_logs
from infermeter.loadgen.runner import RunOutcome, run_test
from infermeter.loadgen.settings import Mode, RunSettings, Scenario

__all__ = [
    "CompletionSink",
    "LogOutput",
    "Mode",
    "QueryBatch",
    "QuerySampleLibrary",
    "RunOutcome",
    "RunSettings",
    "Scenario",
    "SystemUnderTest",
    "run_test",
    "write_logs",
]
