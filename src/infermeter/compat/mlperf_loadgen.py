"""The official ``mlperf_loadgen`` Python API over infermeter's native engine.

A harness switches with one line: ``import infermeter.compat.mlperf_loadgen as lg``.
Same names, signatures, defaults and log files; see docs/compat.md for the
few deliberate differences (clear errors where the wheel crashes, for one).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from infermeter.clock import Clock, MonotonicClock
from infermeter.compat.lg_bridge import (
    FastIssueCallback,
    Handles,
    IssueCallback,
    LoadGenUsageError,
    PyQsl,
    PySut,
    QslAdapter,
    ResponseCallback,
    Router,
    SutAdapter,
)
from infermeter.compat.lg_settings import PRE_TEST_LOG, TestSettings, to_run_settings
from infermeter.compat.lg_types import (
    LoggingMode,
    LogOutputSettings,
    LogSettings,
    QuerySample,
    QuerySampleResponse,
    TestMode,
    TestScenario,
    VectorQuerySample,
    VectorQuerySampleResponse,
)
from infermeter.loadgen.conf import AUDIT_WARNING, apply_conf, load_conf_file
from infermeter.loadgen.logs.detail import DetailLog
from infermeter.loadgen.logs.files import LogOutput, write_logs
from infermeter.loadgen.runner import RunOutcome, run_test
from infermeter.loadgen.settings import Scenario

__all__ = [
    "ConstructFastSUT",
    "ConstructQDL",
    "ConstructQSL",
    "ConstructSUT",
    "DestroyFastSUT",
    "DestroyQDL",
    "DestroyQSL",
    "DestroySUT",
    "FirstTokenComplete",
    "LoadGenUsageError",
    "LogOutputSettings",
    "LogSettings",
    "LoggingMode",
    "QuerySample",
    "QuerySampleResponse",
    "QuerySamplesComplete",
    "StartTest",
    "StartTestWithLogSettings",
    "TestMode",
    "TestScenario",
    "TestSettings",
    "VectorQuerySample",
    "VectorQuerySampleResponse",
]

log = logging.getLogger("infermeter.compat")
_HANDLES = Handles()
_TEST_LOCK = threading.Lock()
_ROUTER: Router | None = None
DEFER_FULL_GC = True  # set False to keep the interpreter's GC thresholds during tests


# -- constructing and destroying ---------------------------------------------------
def ConstructSUT(issue_cb: IssueCallback, flush_cb: Callable[[], Any]) -> int:
    """A SUT whose ``issue_cb(list[QuerySample])`` gets the queries."""
    return _HANDLES.add(PySut(issue_cb, flush_cb, fast=False, name="PySUT"))


def ConstructFastSUT(issue_cb: FastIssueCallback, flush_cb: Callable[[], Any]) -> int:
    """A SUT whose ``issue_cb(ids, indices)`` gets two lists of ints."""
    return _HANDLES.add(PySut(issue_cb, flush_cb, fast=True, name="PyFastSUT"))


def ConstructQDL(
    issue_cb: IssueCallback, flush_cb: Callable[[], Any], name_cb: Callable[[], str]
) -> int:
    """A query dispatch library: a SUT named by ``name_cb()`` (usable in StartTest)."""
    return _HANDLES.add(PySut(issue_cb, flush_cb, fast=False, name=str(name_cb())))


def ConstructQSL(
    total_sample_count: int,
    performance_sample_count: int,
    load_samples_to_ram: Callable[[list[int]], Any],
    unload_samples_from_ram: Callable[[list[int]], Any],
) -> int:
    """A QSL whose callbacks load and unload lists of sample indices."""
    qsl = PyQsl(
        int(total_sample_count),
        int(performance_sample_count),
        load_samples_to_ram,
        unload_samples_from_ram,
    )
    return _HANDLES.add(qsl)


def DestroySUT(sut: int) -> None:
    _HANDLES.destroy(sut, PySut, "SUT", "DestroySUT")


def DestroyFastSUT(sut: int) -> None:
    _HANDLES.destroy(sut, PySut, "SUT", "DestroyFastSUT")


def DestroyQDL(qdl: int) -> None:
    _HANDLES.destroy(qdl, PySut, "SUT", "DestroyQDL")


def DestroyQSL(qsl: int) -> None:
    _HANDLES.destroy(qsl, PyQsl, "QSL", "DestroyQSL")


# -- completing ------------------------------------------------------------------
def QuerySamplesComplete(
    responses: Sequence[QuerySampleResponse],
    response_cb: ResponseCallback | None = None,
) -> None:
    """Samples finished; thread-safe, from any thread, for any mix of queries."""
    router = _ROUTER
    if router is None:
        raise _no_test("QuerySamplesComplete")
    router.complete(responses, response_cb)


def FirstTokenComplete(
    responses: Sequence[QuerySampleResponse],
    response_cb: ResponseCallback | None = None,
) -> None:
    """The first token of each sample arrived (LLM runs); thread-safe."""
    router = _ROUTER
    if router is None:
        raise _no_test("FirstTokenComplete")
    router.first_token(responses, response_cb)


def _no_test(call: str) -> LoadGenUsageError:
    return LoadGenUsageError(
        f"{call} called with no test running; call it only while StartTest runs"
    )


# -- running ---------------------------------------------------------------------
def StartTest(
    sut: int,
    qsl: int,
    test_settings: TestSettings,
    audit_config_filename: str = "audit.config",
) -> None:
    """Run the test with default log settings (outdir ".", trace on)."""
    StartTestWithLogSettings(
        sut, qsl, test_settings, LogSettings(), audit_config_filename
    )


def StartTestWithLogSettings(
    sut: int,
    qsl: int,
    test_settings: TestSettings,
    log_settings: LogSettings,
    audit_config_filename: str = "audit.config",
) -> None:
    """Run the test and write the log files; blocks until every sample completed."""
    global _ROUTER
    py_sut: PySut = _HANDLES.get(sut, PySut, "SUT", "StartTest")
    py_qsl: PyQsl = _HANDLES.get(qsl, PyQsl, "QSL", "StartTest")
    if not isinstance(test_settings, TestSettings):
        raise TypeError(
            f"StartTest takes this module's TestSettings (got {type(test_settings)!r})"
        )
    settings = to_run_settings(test_settings)
    audit = Path(audit_config_filename)
    if audit.is_file():
        log.warning("%s", AUDIT_WARNING)
        for note in apply_conf(
            settings,
            load_conf_file(audit),
            model="*",
            scenario=settings.scenario,
            conf_type="audit",
        ):
            log.warning("%s", note)
    clock = _clock_factory()
    # MonotonicClock reads perf_counter_ns: call it directly on the hot path.
    now = time.perf_counter_ns if type(clock) is MonotonicClock else clock.now_ns
    router = Router(now, token_run=settings.use_token_latencies)
    router.sampled = (
        settings.accuracy_log_probability > 0
        or settings.accuracy_log_sampling_target > 0
    )
    coalesce = settings.server_coalesce_queries
    per_query = settings.scenario is Scenario.SERVER and not coalesce
    with _TEST_LOCK, _deferred_full_gc():
        _ROUTER = router
        try:
            outcome = run_test(
                SutAdapter(py_sut, router, per_query=per_query),
                QslAdapter(py_qsl),
                settings,
                clock=clock,
                on_phase=router.on_phase,
            )
        finally:
            router.close()
            _ROUTER = None
    _annotate(outcome, PRE_TEST_LOG.take(), audit.is_file(), clock)
    _write(outcome, log_settings)


@contextlib.contextmanager
def _deferred_full_gc() -> Iterator[None]:
    """No automatic full (generation 2) collection while the test runs.

    Millions of QuerySample / QuerySampleResponse objects are alive at once;
    full collections would traverse all of them again and again (3x slower
    Offline). Young generations are still collected; thresholds come back after.
    """
    if not DEFER_FULL_GC:
        yield
        return
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _clock_factory() -> Clock:
    return MonotonicClock()


def _annotate(
    outcome: RunOutcome,
    pre_test: list[tuple[str, str, str]],
    audit_found: bool,
    clock: Clock,
) -> None:
    """Add what LoadGen logs outside the engine: conf errors, the audit warning."""
    detail = outcome.detail
    if not pre_test and not audit_found:
        return
    extra = DetailLog(origin_ns=detail.origin_ns)
    for key, message, kind in pre_test:
        extra.log(key, message, detail.origin_ns, kind=kind)
    lines = extra.lines + detail.lines
    if audit_found:
        extra.log(
            "warning_generic_message", AUDIT_WARNING, detail.origin_ns, kind="warning"
        )
        at = next(
            (
                i
                for i, line in enumerate(lines)
                if '"key": "requested_scenario"' in line
            ),
            len(extra.lines) - 1,
        )
        lines.insert(at, extra.lines.pop())
    detail.errors += extra.errors
    detail.warnings += extra.warnings
    if lines and '"key": "num_errors"' in lines[-1]:
        lines.pop()
    detail.lines = lines
    detail.log("num_errors", detail.errors, clock.now_ns())


def _write(outcome: RunOutcome, settings: LogSettings) -> None:
    out = settings.log_output
    paths = write_logs(
        outcome,
        LogOutput(
            Path(out.outdir),
            prefix=out.prefix,
            suffix=out.suffix,
            prefix_with_datetime=bool(out.prefix_with_datetime),
            enable_trace=bool(settings.enable_trace),
        ),
    )
    if out.copy_summary_to_stdout:
        sys.stdout.write(paths[0].read_text())
    if out.copy_detail_to_stdout:
        sys.stdout.write(paths[1].read_text())
    sys.stdout.flush()
