"""Screenshots of the run report, the sweep report and a report of two MLPerf
Endpoints curves, as headless Chromium draws them 1400 px wide: docs/report.png,
docs/sweep-report.png and docs/endpoints-report.png.

The run is the default one shortened (a simulated 8x H100 SXM serving Llama 2
70B, Server, 10 s of arrivals); the sweep is four concurrency points against
the timed mock. The curves are `endpoints run` of the 9 levels `endpoints plan
--c-max 256 --points 9` picks against `serve-sim` (Llama 3.1 8B on one H100 SXM,
then one H200 SXM). All are infermeter results (unverified), the run and the
curves simulated.

    PYTHONPATH=src python docs/screenshots.py            # about two minutes
    PYTHONPATH=src python docs/screenshots.py endpoints  # the curves only
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from infermeter.servers.mock import MockConfig, MockServer

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


def sim_curve(accelerator: str, out: Path) -> None:
    """One 9-point curve against serve-sim on ``accelerator`` (2 s windows)."""
    cmd = [sys.executable, "-m", "infermeter", "serve-sim", "--model", "llama3.1-8b",
           "--accelerator", accelerator, "--count", "1", "--port", "0"]  # fmt: skip
    sim = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        assert sim.stderr is not None
        url = next(w for w in sim.stderr.readline().split() if w.startswith("http"))
        infermeter("endpoints", "run", "--url", url.rstrip(","), "--model",
                   "llama3.1-8b", "--concurrency", LEVELS, "--duration", "2",
                   "--dataset-size", "16", "--input-tokens", "128",
                   "--output-tokens", "64", "--out", str(out))  # fmt: skip
    finally:
        sim.terminate()
        sim.wait(10)


def endpoints_report(work: Path) -> None:
    h100, h200 = work / "h100-sxm", work / "h200-sxm"
    sim_curve("h100-sxm", h100)
    sim_curve("h200-sxm", h200)
    infermeter("report", str(h100), str(h200), "-o", str(work / "curves.html"))
    shoot(work / "curves.html", DOCS / "endpoints-report.png", 1000)


def main() -> None:
    if sys.argv[1:] == ["endpoints"]:
        with tempfile.TemporaryDirectory() as tmp:
            endpoints_report(Path(tmp))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store = str(work / "store.sqlite")
        run = work / "run"
        infermeter("run", "--min-duration", "10s", "--output-dir", str(run),
                   "--store", store)  # fmt: skip
        infermeter("report", str(run), "-o", str(work / "run.html"), "--store", store)
        shoot(work / "run.html", DOCS / "report.png", 2400)
        server = MockServer(
            MockConfig(mode="timed", ttft="const:0.05", itl="const:0.01")
        )
        url = server.start()
        try:
            sweep = work / "sweep"
            infermeter("sweep", "--url", url, "--model", "m", "--concurrency",
                       "1,2,4,8", "--duration", "3", "--out", str(sweep))  # fmt: skip
        finally:
            server.stop()
        infermeter("report", str(sweep), "-o", str(work / "sweep.html"))
        shoot(work / "sweep.html", DOCS / "sweep-report.png", 900)
        endpoints_report(work)


if __name__ == "__main__":
    main()
