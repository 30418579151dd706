"""A fresh ``pip install`` predicts what the checkout predicts (issue 12, check 5).

Run: .venv/bin/python benchmarks/perfmodel/perfmodel_install_check.py [--results FILE]

Creates a virtual environment in a temporary directory, installs this checkout
into it (``pip install <checkout>``, dependencies from the package index), then
runs ``infermeter model predict --results FILE --fit v4.1 --json`` from another
directory with the installed package and with the checkout, and compares the
two outputs row by row. The installed package carries its fitted coefficients
(``perfmodel/data/coefficients.json``); nothing is read from ``../shared`` but
the results file named on the command line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / ".." / "shared" / "data" / "mlperf" / "summary_results_v5.1.json"


def _predict(python: Path, results: Path, cwd: Path) -> dict[str, object]:
    cmd = [
        str(python),
        "-m",
        "infermeter",
        "model",
        "predict",
        "--results",
        str(results),
        "--fit",
        "v4.1",
        "--json",
    ]
    out = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True)
    data: dict[str, object] = json.loads(out.stdout)
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=Path, default=DEFAULT.resolve())
    args = parser.parse_args()
    results = args.results.resolve()
    with tempfile.TemporaryDirectory(prefix="infermeter-install-") as tmp:
        env_dir, elsewhere = Path(tmp) / "venv", Path(tmp) / "work"
        elsewhere.mkdir()
        start = time.perf_counter()
        venv.create(env_dir, with_pip=True)
        python = env_dir / "bin" / "python"
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", str(ROOT)], check=True
        )
        print(f"pip install {ROOT}: {time.perf_counter() - start:.0f} s")
        installed = _predict(python, results, elsewhere)
        where = subprocess.run(
            [str(python), "-c", "import infermeter; print(infermeter.__file__)"],
            cwd=elsewhere,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    checkout = _predict(Path(sys.executable), results, ROOT)
    print(f"installed package: {where}")
    same = installed == checkout
    overall = installed["overall"]
    assert isinstance(overall, dict)
    print(
        f"rows {installed['rows']}, modelled {installed['modelled']}, median "
        f"{overall['median_abs_error']:.4f}, p90 {overall['p90_abs_error']:.4f}; "
        f"identical to the checkout's output: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
