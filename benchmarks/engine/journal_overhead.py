"""What crash-safety costs the engine: the null SUT at 1M QPS with and without it.

Side by side, interleaved, each run in a fresh subprocess:

* ``plain``: ``run_test`` as a library caller uses it (no stop signal, no journal);
* ``safe``: as ``infermeter run`` uses it: a ``StopSignal`` (Ctrl-C) and the
  records journal streaming completed samples to disk every 0.5 s;
* ``base`` (with ``--baseline-src DIR``): the engine of another checkout's
  ``src`` (e.g. the commit before the stop and journal landed), no options.

    python benchmarks/engine/journal_overhead.py                  # 1M QPS, 10 s, 3 rounds
    python benchmarks/engine/journal_overhead.py --baseline-src /tmp/base/src --rounds 5

Prints each run and the median ratios (rate, p99 issue lateness). Issue
lateness is the honest measure: the null SUT completes inside ``issue``, so
anything that holds the GIL (the journal thread) shows up as lateness.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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


def child(variant: str, qps: float, duration_ms: int) -> dict[str, object]:
    from infermeter.loadgen.runner import run_test
    from infermeter.loadgen.settings import RunSettings, Scenario
    from infermeter.suts.null import NullSUT
    from infermeter.testing import InMemoryQSL

    settings = RunSettings(
        scenario=Scenario.SERVER,
        server_target_qps=qps,
        min_duration_ms=duration_ms,
        **SEEDS,
    )
    options: dict[str, object] = {}
    journal = None
    folder = Path(tempfile.mkdtemp(prefix="journal_overhead_"))
    # A safe run's journal is ~650 MB at 1M QPS for 10 s: never leave it behind.
    try:
        if variant == "safe":
            from infermeter.loadgen.journal import RecordJournal
            from infermeter.loadgen.stop import StopSignal

            journal = RecordJournal(folder / "records.journal")
            options = {"stop": StopSignal(grace_ns=10_000_000_000), "watcher": journal}
        cpu0 = time.process_time()
        start = time.perf_counter()
        outcome = run_test(NullSUT(), InMemoryQSL(1024), settings, **options)  # type: ignore[arg-type]
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        if journal is not None:
            journal.close()
        size = sum(p.stat().st_size for p in folder.iterdir())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    s = outcome.summary
    assert s is not None and s.issue_lateness is not None
    return {
        "valid": s.valid,
        "rate": s.completed_samples_per_second,
        "lateness_p99_us": s.issue_lateness.percentiles[0.99] / 1e3,
        "wall_s": wall,
        "cpu_s": cpu,
        "journal_mb": size / 1e6,
        "journaled": journal.rows_written if journal is not None else 0,
        "samples": s.sample_count,
    }


def measure(variant: str, args: argparse.Namespace) -> dict[str, object]:
    env = dict(os.environ)
    if variant == "base":
        env["PYTHONPATH"] = args.baseline_src
    spec = [variant, str(args.qps), str(args.duration_ms)]
    out = subprocess.run(
        [sys.executable, __file__, "--child", *spec],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=900,
    )
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qps", type=float, default=1_000_000)
    parser.add_argument("--duration-ms", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", help="another checkout's src directory")
    parser.add_argument("--child", nargs=3)
    args = parser.parse_args()
    if args.child:
        variant, qps, duration = args.child
        print(json.dumps(child(variant, float(qps), int(duration))))
        return
    variants = ["plain", "safe"] + (["base"] if args.baseline_src else [])
    results: dict[str, list[dict[str, object]]] = {v: [] for v in variants}
    print(f"{'variant':<8}{'valid':<7}{'rate/s':>12}{'p99 late us':>13}{'wall s':>8}"
          f"{'cpu s':>8}{'journal MB':>12}{'journaled':>11}")  # fmt: skip
    for _ in range(args.rounds):
        for variant in variants:  # interleaved: a busy spell hits every variant
            r = measure(variant, args)
            if "error" in r:
                print(f"{variant:<8}error: {r['error']}")
                continue
            results[variant].append(r)
            print(
                f"{variant:<8}{r['valid']!s:<7}{float(r['rate']):>12,.0f}"  # type: ignore[arg-type]
                f"{float(r['lateness_p99_us']):>13.1f}{float(r['wall_s']):>8.2f}"  # type: ignore[arg-type]
                f"{float(r['cpu_s']):>8.2f}"  # type: ignore[arg-type]
                f"{float(r['journal_mb']):>12.1f}{int(r['journaled']):>11,}"  # type: ignore[call-overload]
            )
    _ratios(results)


def _median(rows: list[dict[str, object]], key: str) -> float:
    return statistics.median(float(r[key]) for r in rows)  # type: ignore[arg-type]


def _ratios(results: dict[str, list[dict[str, object]]]) -> None:
    plain = results.get("plain") or []
    if not plain:
        return
    for variant in ("safe", "base"):
        rows = results.get(variant) or []
        if rows:
            rate = _median(rows, "rate") / _median(plain, "rate")
            late = _median(rows, "lateness_p99_us") / _median(plain, "lateness_p99_us")
            cpu = _median(rows, "cpu_s") / _median(plain, "cpu_s")
            print(
                f"{variant} / plain (medians): rate {rate:.3f}x, "
                f"p99 issue lateness {late:.2f}x, CPU {cpu:.2f}x"
            )


if __name__ == "__main__":
    main()
