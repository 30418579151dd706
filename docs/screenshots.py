"""Screenshots of the run report, the sweep report and a report of two MLPerf
Endpoints curves, as headless Chromium draws them 1400 px wide: docs/report.png,
docs/sweep-report.png and docs/endpoints-report.png.

The run is the default one shortened (a simulated 8x H100 SXM serving Llama 2
70B, Server, 10 s of arrivals); the sweep is five concurrency points against
`serve-sim` (Llama 3.1 8B on one H100 SXM) with a TTFT and a TPOT limit. The
curves are `endpoints run` of the 9 levels `endpoints plan --c-max 256 --points
9` picks against `serve-sim` (the same model on one H100 SXM, then one H200
SXM). All are infermeter results (unverified), the run, the sweep and the
curves simulated.

    PYTHONPATH=src python docs/screenshots.py            # about two minutes
    PYTHONPATH=src python docs/screenshots.py endpoints  # the curves only
    PYTHONPATH=src python docs/screenshots.py sweep      # the sweep only
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

DOCS = Path(__file__).resolve().parent
WIDTH = 1400


def infermeter(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "infermeter", *args], check=True)


def shoot(html: Path, png: Path, height: int) -> None:
    chromium = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None
    )
    if chromium is None:
        sys.exit("chromium is not installed")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [chromium, "--headless", "--disable-gpu", "--no-sandbox",
             f"--user-data-dir={profile}", "--hide-scrollbars",
             "--virtual-time-budget=10000", f"--window-size={WIDTH},{height}",
             f"--screenshot={png}", html.as_uri()],
            check=True, capture_output=True,
        )  # fmt: skip
    print(f"wrote {png}")


LEVELS = "1,3,4,9,18,28,84,104,256"  # endpoints plan --c-max 256 --points 9
SWEEP_LEVELS = "1,4,16,64,256"
SWEEP_HEIGHT = 2000


@contextlib.contextmanager
def serve_sim(accelerator: str) -> Iterator[str]:
    """``serve-sim`` of Llama 3.1 8B on one ``accelerator``; its URL."""
    cmd = [sys.executable, "-m", "infermeter", "serve-sim", "--model", "llama3.1-8b",
           "--accelerator", accelerator, "--count", "1", "--port", "0"]  # fmt: skip
    sim = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        assert sim.stderr is not None
        url = next(w for w in sim.stderr.readline().split() if w.startswith("http"))
        yield url.rstrip(",")
    finally:
        sim.terminate()
        sim.wait(10)


def sim_curve(accelerator: str, out: Path) -> None:
    """One 9-point curve against serve-sim on ``accelerator`` (2 s windows)."""
    with serve_sim(accelerator) as url:
        infermeter("endpoints", "run", "--url", url, "--model",
                   "llama3.1-8b", "--concurrency", LEVELS, "--duration", "2",
                   "--dataset-size", "16", "--input-tokens", "128",
                   "--output-tokens", "64", "--out", str(out))  # fmt: skip


def sweep_report(work: Path) -> None:
    """Five concurrency levels against serve-sim (one H100 SXM), with limits."""
    sweep = work / "sweep"
    with serve_sim("h100-sxm") as url:
        infermeter("sweep", "--url", url, "--model", "llama3.1-8b", "--concurrency",
                   SWEEP_LEVELS, "--duration", "2", "--input-tokens", "128",
                   "--output-tokens", "64", "--ttft-ms", "100", "--tpot-ms", "5",
                   "--out", str(sweep))  # fmt: skip
    infermeter("report", str(sweep), "-o", str(work / "sweep.html"))
    shoot(work / "sweep.html", DOCS / "sweep-report.png", SWEEP_HEIGHT)


def endpoints_report(work: Path) -> None:
    h100, h200 = work / "h100-sxm", work / "h200-sxm"
    sim_curve("h100-sxm", h100)
    sim_curve("h200-sxm", h200)
    infermeter("report", str(h100), str(h200), "-o", str(work / "curves.html"))
    shoot(work / "curves.html", DOCS / "endpoints-report.png", 1000)


def main() -> None:
    only = {"endpoints": endpoints_report, "sweep": sweep_report}.get(
        sys.argv[1] if len(sys.argv) > 1 else ""
    )
    if only is not None:
        with tempfile.TemporaryDirectory() as tmp:
            only(Path(tmp))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store = str(work / "store.sqlite")
        run = work / "run"
        infermeter("run", "--min-duration", "10s", "--output-dir", str(run),
                   "--store", store)  # fmt: skip
        infermeter("report", str(run), "-o", str(work / "run.html"), "--store", store)
        shoot(work / "run.html", DOCS / "report.png", 2400)
        sweep_report(work)
        endpoints_report(work)


if __name__ == "__main__":
    main()
