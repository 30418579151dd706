"""infermeter against MLPerf Endpoints' reference client, one pinned core each (issue #38).

Each client's whole process tree runs on CPU 0, the mock (``serve-mock --mode
max-throughput --server lean``, its own log on) on CPU 1; this script itself
sits on CPU 1 too (it only waits and samples /proc). 32-token streamed chat
answers; every prompt of a run is distinct (128 words), so each request the
client recorded is matched to the mock's own row of it. Runs alternate between
the tools (A B A B ...), N1 and N2 requests each; start-up cancels:

    rate = (N2 - N1) / (wall2 - wall1)      marginal CPU = (cpu2 - cpu1) / (N2 - N1)

Per tool and level (medians over ``--repeats``): that rate; the rate in the
mock's window (N2 / first request received .. last byte sent); CPU per request
in that window (the tree's CPU, sampled every 20 ms) and marginal; TTFT p50/p90
as the client saw it and over the mock's (client TTFT minus the mock's, per
request); negative TPOT count; failures as the client counted them and the
mock's completed count; the mock's busy share (its CPU / its window: over 90 %
the row says "mock-limited"); whether the tree stayed on its core. Then the
ratios infermeter / reference, and one row each of start-up (a 16-request run:
CPU s of the tree and peak memory) and paced load (77 req/s, Poisson: CPU s per
1,000 requests in the mock's window, and beyond the start-up run); there
infermeter runs as its users run it, ``infermeter sweep``.

The reference's start-up varies by seconds from run to run, so its wall-clock
rate needs N2 - N1 large (thousands); the rate in the mock's window ("win r/s")
leaves start-up and shutdown out and holds at small N.

    python benchmarks/client/reference_side_by_side.py --quick
    python benchmarks/client/reference_side_by_side.py --levels 16,64,256 \\
        --n1 1000 --n2 5000 --repeats 3 --sut-opt wire=lean

The reference client: ``--client-python`` (its venv; ../shared/vendor/README.md),
run with 1 worker, its CPU pinning off (``--no-cpu-affinity``: it would pin
itself elsewhere), its token counting with the tests' word-level tokenizer.
infermeter: ``run_load`` with the openai SUT (api=chat) in a child process;
``--sut-opt KEY=VALUE`` and ``--wire`` pass through to it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT)]  # side_by_side_runs; the tests' tokenizer

from side_by_side_runs import (  # noqa: E402
    MOCK_CPUS,
    OUT_TOKENS,
    Mock,
    Run,
    crc_of,
    match,
    prompt_texts,
    run_tool,
)
from tests.endpoints_fixtures import word_tokenizer  # noqa: E402

CLIENT_CPUS = {0}
REFERENCE = Path("/tmp/h34-refenv/venv/bin/python")
PACED_RATE = 77.0
STARTUP_N = 16
BUSY_LIMIT = 0.9
TOOLS = ("infermeter", "reference")
CLI = "infermeter sweep"  # the start-up and paced rows: infermeter's own command


def reference_argv(
    args: argparse.Namespace, url: str, n: int, c: int, rate: float, work: Path
) -> list[str]:
    command = args.client_python.parent / "inference-endpoint"
    load = ["--load-pattern", "poisson", "--target-qps", str(rate)] if rate else [
        "--load-pattern", "concurrency", "--concurrency", str(c)
    ]  # fmt: skip
    return [
        str(command), "benchmark", "online",
        "--endpoints", url.removesuffix("/v1"), "--model", "m",
        "--dataset", f"perf:{work / f'prompts_{n}.jsonl'}", *load,
        "--num-samples", str(n), "--duration", "0",
        "--max-output-tokens", str(OUT_TOKENS), "--streaming", "on",
        "--report-dir", str(work / "report"), "--workers", "1", "--no-cpu-affinity",
        "--client.worker-initialization-timeout", "300",
        "--tokenizer", str(work.parent / "tokenizer"),
    ]  # fmt: skip


def infermeter_argv(
    args: argparse.Namespace, url: str, n: int, c: int, rate: float, work: Path
) -> list[str]:
    opts = dict(o.split("=", 1) for o in args.sut_opt)
    spec = {"url": url, "n": n, "c": c, "rate": rate, "sut_opts": opts}
    spec["out"] = str(work / "infermeter.json")
    return [
        sys.executable,
        str(HERE / "side_by_side_runs.py"),
        "--child",
        json.dumps(spec),
    ]


def cli_argv(
    args: argparse.Namespace, url: str, n: int, c: int, rate: float, work: Path
) -> list[str]:
    """``infermeter sweep``: the start-up and paced rows run the user's command."""
    point = ["--rates", str(rate)] if rate else ["--concurrency", str(c)]
    opts = [a for o in args.sut_opt for a in ("--sut-opt", o)]
    return [
        sys.executable, "-m", "infermeter", "sweep", "--url", url, "--model", "m",
        "--api", "chat", *point, "--requests", str(n), "--input-tokens", "128",
        "--output-tokens", str(OUT_TOKENS), "--no-preflight", "--json", *opts,
    ]  # fmt: skip


def reference_records(run: Run, work: Path) -> dict[int, tuple[int, int]]:
    """Per prompt CRC: (issued, first token) ns from the reference's events.jsonl."""
    summary = json.loads((work / "report/performance/result_summary.json").read_text())
    run.completed = int(summary["n_samples_completed"])
    run.failed = int(summary["n_samples_failed"])
    times: dict[str, dict[str, Any]] = {}
    with (work / "report/events.jsonl").open() as f:
        for line in f:
            event = json.loads(line)
            kind, uuid = event["event_type"], event["sample_uuid"]
            if uuid:
                times.setdefault(uuid, {})[kind] = event
    records = {}
    for sample in times.values():
        issued, first = sample.get("sample.issued"), sample.get("sample.recv_first")
        done = sample.get("sample.complete")
        if issued is None or first is None:
            continue
        crc = crc_of(issued["data"][1])
        records[crc] = (issued["timestamp_ns"], first["timestamp_ns"])
        run.negative_tpot += (
            done is not None and done["timestamp_ns"] < first["timestamp_ns"]
        )
    return records


def one_run(
    args: argparse.Namespace,
    mock: Mock,
    tool: str,
    level: str,
    n: int,
    rate: float = 0.0,
) -> Run:
    work = Path(tempfile.mkdtemp(prefix=f"{tool}-", dir=args.out))
    (work / f"prompts_{n}.jsonl").write_text(
        "".join(json.dumps({"prompt": t}) + "\n" for t in prompt_texts(n))
    )
    c = 0 if rate else int(level)
    make = {
        "infermeter": infermeter_argv,
        "reference": reference_argv,
        CLI: cli_argv,
    }[tool]
    run = Run(tool, level, n)
    rows = run_tool(
        make(args, mock.url, n, c, rate, work),
        run,
        CLIENT_CPUS,
        mock.url,
        mock.proc.pid,
    )
    if run.error:  # a table of NaN would hide it: stop here (the mock stops too)
        raise SystemExit(f"{tool} at {level}, {n} requests: {run.error} ({work})")
    if tool == CLI:  # the user's path: its own records stay in its JSON
        run.completed = run.mock_completed
        run.failed = n - run.mock_completed
        return run
    if tool == "infermeter":
        out = json.loads((work / "infermeter.json").read_text())
        run.completed, run.failed = out["completed"], out["failed"]
        run.negative_tpot = out["negative_tpot"]
        records = {crc: (issued, first) for crc, issued, first in out["requests"]}
    else:
        records = reference_records(run, work)
    run.ttft_ms = [(first - issued) / 1e6 for issued, first in records.values()]
    match(run, records, rows)
    return run


def level_row(pairs: list[tuple[Run, Run]]) -> dict[str, Any]:
    """Medians over repeats of one tool at one level; (N1 run, N2 run) pairs."""

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    def pct(values: list[float], q: float) -> float:
        return float(np.percentile(values, q)) if values else float("nan")

    big = [b for _, b in pairs]
    return {
        "req_s": med([(b.n - a.n) / (b.wall_s - a.wall_s) for a, b in pairs]),
        "window_req_s": med([b.n / b.window_s for b in big]),
        "cpu_ms_window": med([1e3 * b.window_cpu_s / b.n for b in big]),
        "cpu_ms_marginal": med(
            [1e3 * (b.cpu_s - a.cpu_s) / (b.n - a.n) for a, b in pairs]
        ),
        "ttft_p50_ms": med([pct(b.ttft_ms, 50) for b in big]),
        "ttft_p90_ms": med([pct(b.ttft_ms, 90) for b in big]),
        "over_mock_p50_ms": med([pct(b.excess_ms, 50) for b in big]),
        "over_mock_p90_ms": med([pct(b.excess_ms, 90) for b in big]),
        "unmatched": max(b.unmatched for b in big),
        "negative_tpot": max(r.negative_tpot for p in pairs for r in p),
        "failed": max(r.failed for p in pairs for r in p),
        "completed_vs_mock": all(
            r.completed == r.mock_completed for p in pairs for r in p
        ),
        "mock_busy": med([b.mock_window_cpu_s / b.window_s for b in big]),
        "escaped": sorted({e for p in pairs for r in p for e in r.escaped}),
    }


def print_levels(rows: dict[str, dict[str, dict[str, Any]]]) -> None:
    head = (
        f"{'level':>6} {'tool':<11} {'req/s':>7} {'win r/s':>8} {'ms/req':>7} "
        f"{'marg ms':>7} {'TTFT50':>7} {'TTFT90':>7} {'+mock50':>7} {'+mock90':>7} "
        f"{'unmatch':>7} {'negTPOT':>7} {'failed':>6} {'=mock':>5} {'mock%':>5} {'pin':>3}"
    )
    print(head)
    for level, tools in rows.items():
        for tool, r in tools.items():
            print(
                f"{level:>6} {tool:<11} {r['req_s']:>7.0f} {r['window_req_s']:>8.0f} "
                f"{r['cpu_ms_window']:>7.3f} {r['cpu_ms_marginal']:>7.3f} "
                f"{r['ttft_p50_ms']:>7.2f} {r['ttft_p90_ms']:>7.2f} "
                f"{r['over_mock_p50_ms']:>7.2f} {r['over_mock_p90_ms']:>7.2f} "
                f"{r['unmatched']:>7} {r['negative_tpot']:>7} {r['failed']:>6} "
                f"{'yes' if r['completed_vs_mock'] else 'NO':>5} "
                f"{100 * r['mock_busy']:>5.0f} {'NO' if r['escaped'] else 'yes':>3}"
                + ("  mock-limited" if r["mock_busy"] > BUSY_LIMIT else "")
            )
        if set(TOOLS) <= set(tools):
            a, b = tools["infermeter"], tools["reference"]
            keys = ("req_s", "window_req_s", "cpu_ms_window", "cpu_ms_marginal")
            cells = [_ratio(a[k], b[k]) for k in keys]
            print(
                f"{level:>6} {'ratio i/r':<11} {cells[0]:>7.2f} {cells[1]:>8.2f} "
                f"{cells[2]:>7.2f} {cells[3]:>7.2f}"
            )
    escaped = {
        e for tools in rows.values() for r in tools.values() for e in r["escaped"]
    }
    for name in sorted(escaped):
        print(f"left the client core: {name}")


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def paced_rows(
    args: argparse.Namespace, mock: Mock, tools: list[str]
) -> dict[str, Any]:
    """Start-up (a 16-request run) and paced load (77 req/s) of each tool.

    Paced CPU per 1k requests: the tree's CPU in the mock's window of the paced
    run (robust), and the paced run's whole CPU beyond the start-up run's (the
    reference's start-up varies by seconds: that one needs long runs)."""
    out = {}
    for name in tools:
        tool = CLI if name == "infermeter" else name
        start = one_run(args, mock, tool, "1", STARTUP_N)
        paced = one_run(args, mock, tool, "paced", args.paced_n, rate=PACED_RATE)
        beyond = 1e3 * (paced.cpu_s - start.cpu_s) / (paced.n - start.n)
        out[tool] = {
            "startup_cpu_s": start.cpu_s,
            "startup_peak_mb": start.peak_rss_mb,
            "paced_req_s": paced.n / paced.window_s,
            "paced_cpu_s_per_1k_window": 1e3 * paced.window_cpu_s / paced.n,
            "paced_cpu_s_per_1k_beyond_startup": beyond,
            "paced_failed": paced.failed,
            "escaped": sorted(set(start.escaped + paced.escaped)),
        }
        print(
            f"{tool:<17} start-up {start.cpu_s:6.2f} CPU-s {start.peak_rss_mb:6.0f} MB"
            f" | paced {out[tool]['paced_req_s']:5.1f} req/s: CPU-s per 1k requests"
            f" {out[tool]['paced_cpu_s_per_1k_window']:6.2f} in the window,"
            f" {beyond:6.2f} beyond start-up ({paced.failed} failed)"
        )
    return out


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client-python", type=Path, default=REFERENCE)
    parser.add_argument("--levels", default="16,64,256")
    parser.add_argument("--n1", type=int, default=1000)
    parser.add_argument("--n2", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paced-n", type=int, default=770)  # 10 s at 77 req/s
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--mock-server", default="lean", choices=("lean", "aiohttp"))
    parser.add_argument(
        "--chunked", action="store_true", help="lean mock: one chunk per SSE event"
    )
    parser.add_argument("--sut-opt", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--wire", help="infermeter's HTTP wire: --sut-opt wire=WIRE")
    parser.add_argument(
        "--no-paced", action="store_true", help="skip must-show 3's rows"
    )
    parser.add_argument("--quick", action="store_true", help="level 16, 200/600, once")
    parser.add_argument("--out", type=Path, help="run folders and results.json")
    args = parser.parse_args()
    if args.quick:
        args.levels, args.repeats, args.paced_n = "16", 1, 154
        args.n1, args.n2 = 200, 600
    if args.wire:
        args.sut_opt.append(f"wire={args.wire}")
    if (
        "reference" in args.tools
        and not (args.client_python.parent / "inference-endpoint").is_file()
    ):
        parser.error(
            f"--client-python {args.client_python}: no inference-endpoint beside it"
        )
    if not 0 < args.n1 < args.n2:
        parser.error("need 0 < --n1 < --n2")
    if (os.cpu_count() or 1) < 2:
        parser.error("needs two CPUs (0: the client, 1: the mock)")
    return args


def main() -> None:
    args = parse_args()
    args.out = args.out or Path(tempfile.mkdtemp(prefix="side-by-side-"))
    args.out.mkdir(parents=True, exist_ok=True)
    os.sched_setaffinity(0, MOCK_CPUS)  # this script waits on the mock's core
    word_tokenizer(args.out / "tokenizer")
    tools = args.tools.split(",")
    mock = Mock(args.mock_server, chunked=args.chunked)
    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    try:
        pairs: dict[str, dict[str, list[tuple[Run, Run]]]] = {}
        runs: list[Run] = []
        for level in args.levels.split(","):
            for _ in range(args.repeats):
                # A B A B: a slow spell of the machine hits both tools alike
                done = {
                    (tool, n): one_run(args, mock, tool, level, n)
                    for n in (args.n1, args.n2)
                    for tool in tools
                }
                runs += done.values()
                for tool in tools:
                    pair = (done[tool, args.n1], done[tool, args.n2])
                    pairs.setdefault(level, {}).setdefault(tool, []).append(pair)
        rows = {
            lv: {t: level_row(p) for t, p in tools_.items()}
            for lv, tools_ in pairs.items()
        }
        print_levels(rows)
        results |= {
            "levels": rows,
            "runs": [asdict(r) | {"ttft_ms": [], "excess_ms": []} for r in runs],
        }
        if not args.no_paced:
            results["paced"] = paced_rows(args, mock, tools)
    finally:
        mock.stop()
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    framing = ", chunked" if args.chunked else ""
    print(f"(mock: {args.mock_server}{framing}; runs and results.json in {args.out})")


if __name__ == "__main__":
    main()
