"""infermeter: benchmark AI inference the way MLPerf Inference does, and further.

The library entry points: ``run_test`` runs a LoadGen test of a
``SystemUnderTest`` over a ``QuerySampleLibrary``; ``write_logs`` writes the
MLPerf log files. The command line is ``infermeter`` (``python -m infermeter``).
"""

from __future__ import annotations

from infermeter.errors import ConfigError, InfermeterError
from infermeter.loadgen import (
    CompletionSink,
    LogOutput,
    Mode,
    QueryBatch,
    QuerySampleLibrary,
    RunOutcome,
    RunSettings,
    Scenario,
    SystemUnderTest,
    run_test,
    write_logs,
)
from infermeter.version import __version__

__all__ = [
    "CompletionSink",
    "ConfigError",
    "InfermeterError",
    "LogOutput",
    "Mode",
    "QueryBatch",
    "QuerySampleLibrary",
    "RunOutcome",
    "RunSettings",
    "Scenario",
    "SystemUnderTest",
    "__version__",
    "run_test",
    "write_logs",
]
