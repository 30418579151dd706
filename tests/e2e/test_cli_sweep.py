"""``infermeter sweep`` against the timed mock: the curve, the files, the Pareto set."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from infermeter.servers.mock import MockConfig, MockProcess
from tests.cli_main import run_main

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A sweep without --out writes runs/sweep-<time> where it runs: here.
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    cfg = MockConfig(mode="timed", ttft="const:0.02", itl="const:0.002")
    with MockProcess(cfg) as base:
        yield base


def test_concurrency_sweep_writes_endpoints_files(url: str, tmp_path: Path) -> None:
    args = [
        "sweep",
        "--url",
        url,
        "--model",
        "m",
        "--concurrency",
        "1,4",
        "--requests",
        "12",
        "--warmup",
        "2",
        "--input-tokens",
        "8",
        "--output-tokens",
        "16",
        "--out",
        str(tmp_path),
        "--json",
    ]
    result = run_main(*args)
    assert result.code == 0, result.output
    rows = json.loads(result.stdout)["points"]
    assert [r["concurrency"] for r in rows] == [1.0, 4.0]
    assert all(r["completed"] == 12 and r["failed"] == 0 for r in rows)
    # Four users get more tokens than one; each user's rate is 1000 / TPOT p90.
    # (How close it comes to the server's 500 tokens/s on a quiet machine:
    # benchmarks/client/mock_fidelity.py.)
    assert rows[1]["system_tps"] > rows[0]["system_tps"] > 0
    for row in rows:
        assert row["tps_per_user"] > 0
        assert row["tps_per_user"] == pytest.approx(1000 / row["tpot_p90_ms"], rel=1e-2)
    summaries = sorted(tmp_path.glob("*/performance/result_summary.json"))
    assert [p.parent.parent.name for p in summaries] == ["00_c1", "01_c4"]
    data = json.loads(summaries[1].read_text())
    assert data["n_samples_completed"] == 12
    assert data["infermeter"]["client"]["requests"] == 12
    # The point's own SUT counts: not the first point's, not the warm-up's.
    assert data["infermeter"]["sut"]["requests"] == 12
    assert data["infermeter"]["token_counts"]["source"] == "usage"
    assert "tokens" in data["infermeter"]["throughput_definition"]
    sweep = json.loads((tmp_path / "sweep.json").read_text())
    assert sweep["label"] == "infermeter results (unverified)"
    assert sweep["points"][1]["pareto"] is True


def test_rate_sweep_table_and_limits(url: str, tmp_path: Path) -> None:
    args = [
        "sweep",
        "--url",
        url,
        "--model",
        "m",
        "--rates",
        "20,40",
        "--requests",
        "10",
        "--output-tokens",
        "8",
        "--pattern",
        "constant",
        "--ttft-ms",
        "1",
        "--out",
        str(tmp_path / "rates"),
    ]
    result = run_main(*args)
    assert result.code == 0, result.output
    assert "Endpoint curve" in result.output and "meets" in result.output
    assert " no " in result.output  # a 1 ms TTFT limit: no point meets it
    # Its report: a rate sweep is not an Endpoints curve, so its own section
    # has the Pareto chart too, the limit drawn, the load as a rate.
    report = run_main("report", str(tmp_path / "rates"), "-o", str(tmp_path / "r.html"))
    assert report.code == 0, report.output
    page = (tmp_path / "r.html").read_text()
    for text in ("Pareto front: rates", "TTFT limit 1 ms", "requests/s (target rate)",
                 "<th>meets limits</th>", "<td>00_r20</td>"):  # fmt: skip
        assert text in page, text


def test_sweep_needs_exactly_one_mode(url: str) -> None:
    result = run_main("sweep", "--url", url, "--model", "m")
    assert result.code != 0
    assert "exactly one of --concurrency" in result.stderr


def test_trace_replay_point(url: str, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    rows = [
        {
            "timestamp": 100 * i,
            "input_length": 16,
            "output_length": 4 + i % 3,
            "hash_ids": [i % 2],
        }
        for i in range(10)
    ]
    trace.write_text("\n".join(json.dumps(r) for r in rows))
    args = [
        "sweep",
        "--url",
        url,
        "--model",
        "m",
        "--replay",
        "--trace",
        str(trace),
        "--speed",
        "2",
        "--out",
        str(tmp_path / "out"),
        "--json",
    ]
    result = run_main(*args)
    assert result.code == 0, result.output
    (row,) = json.loads(result.stdout)["points"]
    assert row["completed"] == 10 and row["failed"] == 0
    summary = json.loads(
        (
            tmp_path / "out" / "00_trace" / "performance" / "result_summary.json"
        ).read_text()
    )
    # Output lengths follow the trace (the timed mock stops at max_tokens).
    assert summary["output_sequence_lengths"]["total"] == sum(
        4 + i % 3 for i in range(10)
    )
    # Ten requests 50 ms apart at speed 2: the point lasts about 0.45 s plus one answer.
    assert 0.4e9 < summary["duration_ns"] < 1.5e9


def test_a_sweep_where_every_request_fails_exits_non_zero_with_reasons(
    tmp_path: Path,
) -> None:
    from infermeter.servers.mock import MockServer

    server = MockServer()
    dead = server.start()
    server.stop()  # nothing listens there any more
    args = ["sweep", "--url", dead, "--model", "m", "--concurrency", "1,2",
            "--requests", "6", "--no-preflight", "--out", str(tmp_path), "--json"]  # fmt: skip
    result = run_main(*args)
    assert result.code == 1, result.output
    rows = json.loads(result.stdout)["points"]
    assert not any(r["pareto"] for r in rows)
    assert all(r["completed"] == 0 and r["failed"] == 6 for r in rows)
    # One reason per point, grouped (no per-request ids keep them apart).
    assert all(len(r["failure_reasons"]) == 1 for r in rows)
    assert all(not r["client_bound"] for r in rows)
    assert "no request completed" in result.stderr
    table = run_main(*args[:-1], "--force")  # the same --out
    assert table.code == 1
    assert "6 of 6 requests failed: 6 x cannot connect" in table.stdout


def test_a_negative_seed_or_a_zero_metrics_interval_is_refused(url: str) -> None:
    # --seed -1 reached numpy; --metrics-interval 0s would scrape in a busy loop.
    base = ["sweep", "--url", url, "--model", "m", "--concurrency", "1"]
    seed = run_main(*base, "--seed", "-1")
    assert seed.code == 2 and "Invalid value for '--seed'" in seed.output
    scrape = run_main(*base, "--metrics-interval", "0s")
    assert "--metrics-interval must be > 0" in scrape.stderr
    wait = run_main(*base, "--completion-timeout", "0s")
    assert wait.code == 2 and "--completion-timeout must be > 0" in wait.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ttft-ms", "0", "--search"], "--ttft-ms must be > 0 (got 0)"),
        (["--percentile", "101"], "--percentile must be in (0, 100] (got 101)"),
        (["--rates", "5,-2"], "--rates must be > 0 (got -2)"),
        (["--rates", "a,b"], "--rates 'a,b' is not a list of numbers"),
        (["--rates", "1,inf"], "--rates '1,inf' is not a list of numbers"),
        (["--concurrency", "1,2.5"], "--concurrency takes whole numbers"),
        (["--speed", "-1"], "--speed must be > 0 (got -1)"),
        (["--burstiness", "0"], "--burstiness must be > 0 (got 0)"),
        (["--duration", "-1"], "--duration must be > 0 (got -1)"),
    ],
)
def test_bad_numbers_are_refused_before_any_request(
    args: list[str], message: str
) -> None:
    # Each was sent to the server (a negative warm-up ended in "internal error",
    # --ttft-ms -1 searched for a rate no server can meet).
    base = ["sweep", "--url", "http://127.0.0.1:9/v1", "--model", "m"]
    chosen = {"--rates", "--search", "--concurrency"} & set(args)
    mode = [] if chosen else ["--concurrency", "1"]
    result = run_main(*base, *mode, *args)
    assert message in result.stderr
    warm = run_main(*base, "--concurrency", "1", "--warmup", "-1")
    assert warm.code == 2 and "Invalid value for '--warmup'" in warm.output


def test_an_unwritable_out_folder_is_refused_before_any_load(
    url: str, tmp_path: Path
) -> None:
    # It ended in "internal error: NotADirectoryError" once the first point ran.
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    args = ["sweep", "--url", url, "--model", "m", "--concurrency", "1",
            "--requests", "4", "--out", str(blocked / "sweep")]  # fmt: skip
    result = run_main(*args)
    assert "--out" in result.stderr
    assert "cannot be written (Not a directory)" in result.stderr
    assert "preflight" not in result.output  # refused before the probe request


def test_a_sweep_without_a_server_fails_in_the_preflight(tmp_path: Path) -> None:
    from infermeter.servers.mock import MockServer

    server = MockServer()
    dead = server.start()
    server.stop()
    args = ["sweep", "--url", dead, "--model", "m", "--concurrency", "1",
            "--requests", "6"]  # fmt: skip
    result = run_main(*args)
    assert result.code == 1, result.output  # a SUTConnectionError: one line, exit 1
    (error,) = [x for x in result.stderr.splitlines() if x.startswith("error: ")]
    assert "connection refused" in error and "Traceback" not in result.stderr


def test_a_non_streamed_sweep_shows_ttft_and_tpot_as_not_measured(url: str) -> None:
    args = ["sweep", "--url", url, "--model", "m", "--concurrency", "2",
            "--requests", "6", "--output-tokens", "8", "--sut-opt", "stream=false"]  # fmt: skip
    result = run_main(*args, "--json")
    assert result.code == 0, result.output
    row = json.loads(result.stdout)["points"][0]
    assert (row["ttft_p90_ms"], row["tpot_p90_ms"], row["tps_per_user"]) == (
        None,
        None,
        None,
    )
    assert row["completed"] == 6 and row["system_tps"] > 0
    table = run_main(*args)
    assert table.code == 0
    assert table.stdout.count("n/a") >= 3


def _small_sweep(url: str, levels: str, *extra: str) -> list[str]:
    return ["sweep", "--url", url, "--model", "m", "--concurrency", levels,
            "--requests", "4", "--warmup", "0", "--input-tokens", "4",
            "--output-tokens", "4", *extra]  # fmt: skip


def test_a_sweep_without_out_writes_a_default_folder_and_says_so(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    done = run_main(*_small_sweep(url, "1,2"))
    assert done.code == 0, done.output
    folders = list((tmp_path / "runs").glob("sweep-*"))
    assert len(folders) == 1 and (folders[0] / "sweep.json").is_file()
    name = str(folders[0].relative_to(tmp_path))
    assert f"sweep: results go to {name}" in done.stderr
    assert f"Sweep folder: {name}" in done.stderr
    # A line per point as it starts and as it ends, in order.
    lines = [line for line in done.stderr.splitlines() if line.startswith("point ")]
    assert lines[0] == "point 1 of 2: concurrency 1: running"
    assert lines[1].startswith("point 1 of 2: concurrency 1: 4 completed, 0 failed")
    assert lines[2] == "point 2 of 2: concurrency 2: running"
    assert "tokens/s" in lines[3] and "TTFT p90" in lines[3]
    # The table says concurrency as users: "2", not "2.0"; it fits 80 columns.
    rows = [line for line in done.stdout.splitlines() if "│" in line]
    assert [row.split("│")[1].strip() for row in rows] == ["1", "2"]
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert "meets" not in done.stdout  # no --ttft-ms or --tpot-ms: no such column


def test_rerunning_into_an_out_needs_force_and_keeps_no_stale_point(
    url: str, tmp_path: Path
) -> None:
    out = tmp_path / "s"
    assert run_main(*_small_sweep(url, "1,2,4", "--out", str(out))).code == 0
    again = run_main(*_small_sweep(url, "1", "--out", str(out)))
    assert again.code == 2 and "--force" in again.stderr
    assert len(list(out.glob("*/performance"))) == 3  # refused: nothing touched
    (out / "notes.txt").write_text("mine")
    forced = run_main(*_small_sweep(url, "1", "--out", str(out), "--force"))
    assert forced.code == 0, forced.output
    assert sorted(p.name for p in out.iterdir()) == ["00_c1", "notes.txt", "sweep.json"]
