"""Does a sweep against a server closing each stream ever lose a request? Many runs.

Runs the sweep of ``tests/integration/test_llama_server.py`` (one point,
concurrency 4, 24 requests, against its loopback server that drops a request
coming on a connection that carried a stream) ``--runs`` times, optionally
beside ``--busy`` spinning processes, and counts the runs where a request was
lost, failed or left unanswered. A rare failure needs thousands of runs to see:

    PYTHONPATH=src .venv/bin/python benchmarks/client/closing_server_loop.py \\
        --runs 4000 --busy 3

Prints one line per bad run (its counts and folder) and a total; exit 1 if any.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _spin() -> None:
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--busy", type=int, default=0, help="spinning processes")
    parser.add_argument("--wire", default="lean", choices=("lean", "aiohttp"))
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.integration.test_llama_server import LlamaServerLike, _sweep

    spinners = [
        multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)
    ]
    for spinner in spinners:
        spinner.start()
    bad = 0
    start = time.monotonic()
    try:
        for i in range(args.runs):
            folder = Path(tempfile.mkdtemp(prefix="closing-server-"))
            server = LlamaServerLike()
            with server as url:
                result = _sweep(url, folder / "sweep", [4], 24, wire=args.wire)
            row = result.table()[0]
            if row["failed"] or row.get("unanswered") or row["completed"] != 24:
                bad += 1
                counts = {
                    k: row.get(k)
                    for k in ("issued", "completed", "failed", "unanswered")
                }
                print(f"run {i}: {counts}, server answered {server.answered}: {folder}")
            else:
                shutil.rmtree(folder)
    finally:
        for spinner in spinners:
            spinner.terminate()
    took = time.monotonic() - start
    print(f"{bad} of {args.runs} runs lost a request ({args.wire} wire, "
          f"{args.busy} busy processes, {took:.0f} s)")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
