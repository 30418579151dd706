"""Null-SUT throughput and memory: the native engine beside the official LoadGen wheel.

Each measurement runs in a fresh subprocess (the wheel keeps global state, and
peak RSS must be per run). Prints one table with ratios.

    python benchmarks/engine/null_sut.py                    # the default set (about 2 minutes)
    python benchmarks/engine/null_sut.py --quick            # short durations, for a smoke test

Both sides use the same null SUT semantics (tools/official_loadgen_null_sut.py
in the shared material): every sample is completed from inside issue with a
4-byte response; PerformanceOnly, trace off, Server bound 100 ms, QSL 1024/1024,
mlperf.conf seeds. Offline rows use min_duration 0: a null SUT finishes a
million samples long before any useful minimum, so they measure the engine's
throughput, not the duration rule.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SEEDS = {
    "qsl_rng_seed": 2085463073848966840,
    "sample_index_rng_seed": 2747215439041700203,
    "schedule_rng_seed": 16159082839903944936,
}


def _rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_native(spec: dict[str, float | int | str]) -> dict[str, object]:
    from infermeter.loadgen.runner import run_test
    from infermeter.loadgen.settings import RunSettings, Scenario
    from infermeter.suts.null import NullSUT
    from infermeter.testing import InMemoryQSL

    scenario = Scenario.parse(str(spec["scenario"]))
    settings = RunSettings(
        scenario=scenario,
        min_duration_ms=int(spec["duration_ms"]),
        min_query_count=int(spec.get("min_query_count", 100)),
        **SEEDS,
    )
    if scenario is Scenario.SERVER:
        settings.server_target_qps = float(spec["qps"])
    else:
        # The query size comes from min_query_count, as on the official side.
        settings.offline_expected_qps = 1.0
        settings.min_query_count = int(spec["samples"])
    before = _rss_kib()
    start = time.perf_counter()
    outcome = run_test(NullSUT(), InMemoryQSL(1024), settings)
    wall = time.perf_counter() - start
    s = outcome.summary
    assert s is not None and s.latency is not None
    return {
        "valid": s.valid,
        "queries": s.sample_count,
        "rate": s.completed_samples_per_second
        if scenario is Scenario.SERVER
        else s.samples_per_second,
        "p99_ms": s.latency.percentiles[0.99] / 1e6,
        "wall_s": wall,
        "rss_delta_bytes": (_rss_kib() - before) * 1024,
    }


def child_official(spec: dict[str, float | int | str]) -> dict[str, object]:
    import array

    import mlperf_loadgen as lg

    payload = array.array("B", b"\x01\x02\x03\x04")
    address, size = payload.buffer_info()

    def issue(samples):  # type: ignore[no-untyped-def]
        lg.QuerySamplesComplete(
            [lg.QuerySampleResponse(s.id, address, size) for s in samples]
        )

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(1024, 1024, lambda i: None, lambda i: None)
    ts = lg.TestSettings()
    scenario = str(spec["scenario"])
    ts.scenario = (
        lg.TestScenario.Server if scenario == "Server" else lg.TestScenario.Offline
    )
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms = int(spec["duration_ms"])
    ts.min_query_count = int(spec.get("min_query_count", 100))
    for key, value in SEEDS.items():
        setattr(ts, key, value)
    if scenario == "Server":
        ts.server_target_qps = float(spec["qps"])
    else:
        ts.min_query_count = int(spec["samples"])
        ts.offline_expected_qps = 1.0
    out = Path(tempfile.mkdtemp(prefix="nullsut_"))
    ls = lg.LogSettings()
    ls.log_output.outdir = str(out)
    ls.enable_trace = False
    before = _rss_kib()
    start = time.perf_counter()
    lg.StartTestWithLogSettings(sut, qsl, ts, ls)
    wall = time.perf_counter() - start
    detail = {}
    for line in (out / "mlperf_log_detail.txt").read_text().splitlines():
        if line.startswith(":::MLLOG"):
            rec = json.loads(line[len(":::MLLOG ") :])
            detail[rec["key"]] = rec["value"]
    rate_key = (
        "result_completed_samples_per_sec"
        if scenario == "Server"
        else "result_samples_per_second"
    )
    return {
        "valid": detail["result_validity"] == "VALID",
        "queries": detail["result_query_count"]
        if scenario == "Server"
        else int(spec["samples"]),
        "rate": float(detail[rate_key]),
        "p99_ms": float(detail["result_99.00_percentile_latency_ns"]) / 1e6,
        "wall_s": wall,
        "rss_delta_bytes": (_rss_kib() - before) * 1024,
    }


def measure(engine: str, spec: dict[str, object]) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", engine, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if result.returncode != 0:
        return {
            "error": result.stderr.strip().splitlines()[-1]
            if result.stderr
            else "failed"
        }
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def plan(quick: bool) -> list[tuple[str, str, dict[str, object]]]:
    d = 2000 if quick else 10000
    return [
        (
            "Server 300k QPS",
            "official",
            {"scenario": "Server", "qps": 300_000, "duration_ms": d},
        ),
        (
            "Server 400k QPS",
            "official",
            {"scenario": "Server", "qps": 400_000, "duration_ms": d},
        ),
        (
            "Server 1M QPS",
            "official",
            {"scenario": "Server", "qps": 1_000_000, "duration_ms": d},
        ),
        (
            "Server 1M QPS",
            "native",
            {"scenario": "Server", "qps": 1_000_000, "duration_ms": d},
        ),
        (
            "Server 2M QPS",
            "native",
            {"scenario": "Server", "qps": 2_000_000, "duration_ms": d},
        ),
        (
            "Offline 1M samples",
            "official",
            {"scenario": "Offline", "samples": 1_000_000, "duration_ms": 0},
        ),
        (
            "Offline 1M samples",
            "native",
            {"scenario": "Offline", "samples": 1_000_000, "duration_ms": 0},
        ),
        (
            "Offline 10M samples",
            "native",
            {"scenario": "Offline", "samples": 10_000_000, "duration_ms": 0},
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="run only rows whose name has this")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "SPEC"))
    args = parser.parse_args()
    if args.child:
        engine, spec = args.child[0], json.loads(args.child[1])
        run = child_native if engine == "native" else child_official
        print(json.dumps(run(spec)))
        return
    rows = []
    print(
        f"{'run':<22}{'engine':<10}{'valid':<7}{'rate/s':>14}{'p99 ms':>10}"
        f"{'wall s':>8}{'B/query':>9}"
    )
    for name, engine, spec in plan(args.quick):
        if args.only not in name:
            continue
        r = measure(engine, spec)
        rows.append((name, engine, r))
        if "error" in r:
            print(f"{name:<22}{engine:<10}skipped: {r['error']}")
            continue
        per_query = float(r["rss_delta_bytes"]) / max(1, int(r["queries"]))  # type: ignore[arg-type]
        print(
            f"{name:<22}{engine:<10}{r['valid']!s:<7}{float(r['rate']):>14,.0f}"  # type: ignore[arg-type]
            f"{float(r['p99_ms']):>10.2f}{float(r['wall_s']):>8.2f}{per_query:>9.0f}"
        )  # type: ignore[arg-type]
    _ratios(rows)


def _ratios(rows: list[tuple[str, str, dict[str, object]]]) -> None:
    def best(engine: str, prefix: str) -> float:
        rates = [
            float(r["rate"])
            for n, e, r in rows  # type: ignore[arg-type]
            if e == engine and n.startswith(prefix) and r.get("valid")
        ]
        return max(rates, default=0.0)

    for prefix in ("Server", "Offline"):
        ours, theirs = best("native", prefix), best("official", prefix)
        if theirs:
            print(
                f"{prefix}: best VALID rate native {ours:,.0f}/s vs official {theirs:,.0f}/s "
                f"= {ours / theirs:.2f}x"
            )


if __name__ == "__main__":
    main()
