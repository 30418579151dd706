"""Timings of the results layer: import a published round, diff, build a report.

Run: .venv/bin/python benchmarks/results/bench_results.py  (prints a Markdown table).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.results_fixtures import write_run  # noqa: E402

from infermeter.report.html import build_report  # noqa: E402
from infermeter.results.diff import diff_runs  # noqa: E402
from infermeter.results.published import load_summary_file  # noqa: E402
from infermeter.results.runfolder import load_run  # noqa: E402
from infermeter.results.store import Store  # noqa: E402

V41 = ROOT.parent / "shared" / "data" / "mlperf" / "summary_results_v4.1.json"


def timed(label: str, fn, repeat: int = 3) -> object:
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    print(f"| {label} | {best * 1e3:,.0f} ms |")
    return value


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    print("| Case | Best of 3 |\n|---|---|")
    if V41.is_file():
        rows = timed(
            "parse summary_results_v4.1.json (937 rows)", lambda: load_summary_file(V41)
        )

        def store_import() -> int:
            with Store(tmp / f"s{time.monotonic_ns()}.sqlite") as db:
                return db.add_published(rows, source="bench")

        timed("import 937 rows into a new store (one transaction)", store_import)
    n = 100_000
    a = load_run(write_run(tmp / "a", n=n, seed=1, qps=1000.0))
    b = load_run(write_run(tmp / "b", n=n, seed=2, qps=1000.0))
    timed(
        f"diff, {n:,} vs {n:,} samples, 1,000 resamples, 8 metrics",
        lambda: diff_runs(a, b),
        repeat=1,
    )
    html = timed(f"build HTML report, {n:,} samples", lambda: build_report([a]))
    print(f"| report size | {len(str(html)) / 1e6:.2f} MB |")


if __name__ == "__main__":
    main()
