"""Our MLPerf log files have the official LoadGen's shape, line for line.

For each case the official wheel (in a subprocess, when installed) and the
native engine run a null SUT with the same settings. Numbers are replaced by
``N`` and the lines compared; detail-log keys and the accuracy log are compared
too. Without the wheel, skeletons it recorded (``python -m
tests.official.record_logs``) stand in.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infermeter.clock import MonotonicClock
from infermeter.loadgen.logs.files import LogOutput, write_logs
from infermeter.loadgen.runner import run_test
from infermeter.loadgen.settings import Mode, RunSettings, Scenario
from infermeter.suts.null import NullSUT
from infermeter.testing import InMemoryQSL

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "tests" / "data" / "official_log_skeletons.json"
CASES: dict[str, dict[str, object]] = {
    "server": {
        "scenario": "Server",
        "server_target_qps": 2000.0,
        "min_duration_ms": 300,
    },
    "server_tokens": {
        "scenario": "Server",
        "server_target_qps": 2000.0,
        "min_duration_ms": 300,
        "use_token_latencies": True,
        "ttft_latency": 2_000_000_000,
        "tpot_latency": 200_000_000,
        "tokens": True,
    },
    "offline_tokens": {
        "scenario": "Offline",
        "offline_expected_qps": 20000.0,
        "min_duration_ms": 0,
        "use_token_latencies": True,
        "tokens": True,
    },
    "offline": {
        "scenario": "Offline",
        "offline_expected_qps": 20000.0,
        "min_duration_ms": 0,
    },
    # 700 queries at least: the 99th-percentile early-stopping line (662
    # queries) is then there however slow the machine is.
    "single_stream": {
        "scenario": "SingleStream",
        "single_stream_expected_latency_ns": 1000,
        "min_duration_ms": 50,
        "min_query_count": 700,
    },
    "single_stream_tokens": {
        "scenario": "SingleStream",
        "single_stream_expected_latency_ns": 1000,
        "min_duration_ms": 50,
        "min_query_count": 700,
        "use_token_latencies": True,
        "tokens": True,
    },
    "multi_stream": {
        "scenario": "MultiStream",
        "multi_stream_expected_latency_ns": 5000,
        "min_duration_ms": 50,
        "min_query_count": 662,
    },
    "multi_stream_tokens": {
        "scenario": "MultiStream",
        "multi_stream_expected_latency_ns": 5000,
        "min_duration_ms": 50,
        "min_query_count": 662,
        "use_token_latencies": True,
        "tokens": True,
    },
    "server_sampled_accuracy_log": {
        "scenario": "Server",
        "server_target_qps": 2000.0,
        "min_duration_ms": 300,
        "accuracy_log_probability": 0.1,
        "accuracy_log_rng_seed": 1234,
    },
    "offline_sampling_target": {
        "scenario": "Offline",
        "offline_expected_qps": 5000.0,
        "min_duration_ms": 0,
        "min_query_count": 3000,
        "accuracy_log_sampling_target": 40,
        "accuracy_log_rng_seed": 99,
    },
    "offline_accuracy": {
        "scenario": "Offline",
        "mode": "AccuracyOnly",
        "total": 50,
        "perf": 50,
    },
}
# Keys of LoadGen's C++ build and logger internals, which have no meaning here.
NATIVE_ONLY_ABSENT = {
    "loadgen_build_date_local",
    "loadgen_build_date_utc",
    "loadgen_git_commit_date",
    "loadgen_git_log_message",
    "loadgen_git_status_message",
    "get_sut_name_duration_ns",
    "logger_swap_request_slots_retry_count",
    "logger_swap_request_slots_retry_retry_count",
    "logger_swap_request_slots_retry_reencounter_count",
    "logger_start_reading_entries_retry_count",
    "logger_tls_total_log_cas_fail_count",
    "logger_tls_total_swap_buffers_slot_retry_count",
    "warning_generic_message",
    "requested_infer_token_latencies",
    "requested_token_latency_scaling_factor",
}
NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]\d+)?")


def skeleton(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if line.startswith("SUT name :"):
            continue
        line = NUMBER.sub("N", line)
        # LoadGen counts its own logger warnings (allocation, contention); ours
        # has no such logger, so any count of warnings reads as none.
        line = re.sub(
            r"^N warnings? encountered\. See detailed log\.$",
            "No warnings encountered during test.",
            line,
        )
        lines.append(line)
    return lines


def official(name: str, *, recorded: bool = False) -> dict[str, object]:
    if recorded or importlib.util.find_spec("mlperf_loadgen") is None:
        return json.loads(RECORDED.read_text())[name]  # type: ignore[no-any-return]
    spec = dict(CASES[name], trace=False)
    out = subprocess.run(
        [sys.executable, "-m", "tests.official.probe", json.dumps(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result = json.loads(out.stdout)
    return {
        "summary": skeleton(result["summary_text"]),
        "detail_keys": result["detail_keys"],
        "accuracy_text": result["accuracy_text"],
    }


def write_native_logs(case: dict[str, object], folder: Path) -> None:
    """Run ``case`` (settings plus total/perf/tokens) on the null SUT; write its logs."""
    spec = dict(case)
    total = int(spec.pop("total", 1024))  # type: ignore[call-overload]
    perf = int(spec.pop("perf", 1024))  # type: ignore[call-overload]
    tokens = bool(spec.pop("tokens", False))
    settings = RunSettings(
        scenario=Scenario.parse(str(spec.pop("scenario"))),
        mode=Mode.parse(str(spec.pop("mode", "PerformanceOnly"))),
    )
    for key, value in spec.items():
        setattr(settings, key, value)
    outcome = run_test(
        NullSUT(token_run=tokens),
        InMemoryQSL(total, perf),
        settings,
        clock=MonotonicClock(),
    )
    write_logs(outcome, LogOutput(folder))


def ours(name: str, tmp_path: Path) -> dict[str, object]:
    write_native_logs(CASES[name], tmp_path)
    detail = (tmp_path / "mlperf_log_detail.txt").read_text().splitlines()
    assert detail[0].startswith(":::MLLOG ")
    keys = {json.loads(line[len(":::MLLOG ") :])["key"] for line in detail}
    return {
        "summary": skeleton((tmp_path / "mlperf_log_summary.txt").read_text()),
        "detail_keys": sorted(keys),
        "accuracy_text": (tmp_path / "mlperf_log_accuracy.json").read_text(),
    }


@pytest.mark.parametrize("recorded", [False, True], ids=["live", "recorded"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_logs_have_the_official_shape(
    name: str, recorded: bool, tmp_path: Path
) -> None:
    expected = official(name, recorded=recorded)
    got = ours(name, tmp_path)
    assert got["summary"] == expected["summary"]
    missing = set(expected["detail_keys"]) - set(got["detail_keys"])  # type: ignore[arg-type]
    assert missing <= NATIVE_ONLY_ABSENT, sorted(missing)
    extra = set(got["detail_keys"]) - set(expected["detail_keys"])  # type: ignore[arg-type]
    assert not extra, sorted(extra)
    assert got["accuracy_text"] == expected["accuracy_text"]


def test_trace_is_off_by_default_and_valid_chrome_json_when_asked(
    tmp_path: Path,
) -> None:
    settings = RunSettings(
        scenario=Scenario.SERVER, server_target_qps=2000.0, min_duration_ms=100
    )
    outcome = run_test(NullSUT(), InMemoryQSL(64), settings, clock=MonotonicClock())
    plain = write_logs(outcome, LogOutput(tmp_path / "plain"))
    assert not any(p.name.endswith("trace.json") for p in plain)
    paths = write_logs(outcome, LogOutput(tmp_path / "traced", enable_trace=True))
    trace = json.loads(
        next(p for p in paths if p.name.endswith("trace.json")).read_text()
    )
    samples = [e for e in trace["traceEvents"] if e.get("name") == "Sample"]
    assert outcome.performance is not None
    assert len(samples) == 2 * outcome.performance.samples_issued  # begin + end each
    begins = [e for e in samples if e["ph"] == "b"]
    assert all(e["args"]["complete_ns"] >= 0 for e in begins)
    assert trace["displayTimeUnit"] == "ns"
