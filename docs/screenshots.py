"""Screenshots of the run report and the sweep report, as headless Chromium
draws them 1400 px wide: docs/report.png and docs/sweep-report.png.

The run is the default one shortened (a simulated 8x H100 SXM serving Llama 2
70B, Server, 10 s of arrivals); the sweep is four concurrency points against
the timed mock. Both are infermeter results (unverified), the run simulated.

    PYTHONPATH=src python docs/screenshots.py            # about a minute
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


def main() -> None:
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


if __name__ == "__main__":
    main()
