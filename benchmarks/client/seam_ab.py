"""A/B of the HTTP client's hot path: CPU per streamed request, two source trees.

Did a change to the exchange (``suts/http_exchange.py``, ``sse.py``,
``http_local.py``) cost the plain path anything? Each round runs one client
process per tree, in alternating order, against one max-throughput mock
server: the openai SUT (``OpenAIHttpSUT``, streamed chat, 32 output tokens)
keeps ``--concurrency`` requests in flight until ``--requests`` completed
(after a warm-up), and reports its process CPU (all threads) per request.
The client is pinned to CPU 0 and the server to CPU 1 where there are two.

    git archive 4cf5fe7 src | tar -x -C /tmp/base
    python benchmarks/client/seam_ab.py --a /tmp/base/src --b src --rounds 6
    python benchmarks/client/seam_ab.py --a src --wire-a aiohttp --b src --wire-b lean

Prints the per-round figures, each tree's median and best and the ratios
B/A (CPU per request, and the median req/s). ``--wire-a``/``--wire-b`` pick
each side's HTTP wire (``lean`` or ``aiohttp``), so one tree A/Bs its wires.
About 1 minute on an idle 2-core VM at the defaults; much longer under
load. ``--parse-only`` times the stream read and token count alone (no
server, no network: the part of the hot path a parser change moves), best of
20 repeats per round, which filters out other processes' load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

WARMUP = 300


def _child(url: str, requests: int, concurrency: int, wire: str) -> dict[str, Any]:
    """One client run (imports infermeter from the PYTHONPATH it was given)."""
    import numpy as np

    from infermeter.loadgen.interfaces import QueryBatch
    from infermeter.suts.http_local import OpenAIHttpSUT
    from infermeter.suts.openai_request import OpenAIConfig
    from infermeter.suts.prompts import SyntheticPrompts

    class ClosedLoop:
        """A sink that issues the next request as each one ends."""

        def __init__(self, sut: OpenAIHttpSUT, total: int) -> None:
            self.sut, self.total = sut, total
            self.issued = self.ended = self.failed = 0
            self.done = threading.Event()

        def issue(self, n: int) -> None:
            ids = np.arange(self.issued, self.issued + n, dtype=np.int64)
            self.issued += n
            self.sut.issue_query(QueryBatch(ids, ids % 256, ids * 0), self)

        def first_token(self, ids: Any, data: Any = None, *, at_ns: Any = None) -> None:
            pass

        def complete(self, ids: Any, **kw: Any) -> None:
            self._ended()

        def fail(self, ids: Any, reason: str) -> None:
            self.failed += 1
            self._ended()

        def wants_data(self, ids: Any) -> Any:
            return np.zeros(len(ids), dtype=bool)

        def _ended(self) -> None:
            self.ended += 1
            if self.issued < self.total:
                self.issue(1)
            elif self.ended == self.total:
                self.done.set()

    prompts = SyntheticPrompts(256, input_tokens=128, output_tokens=32)
    chosen: dict[str, Any] = {"wire": wire} if wire else {}  # older trees have none
    config = OpenAIConfig(
        url=url, model="mock-model", api="chat", max_tokens=32, **chosen
    )
    with OpenAIHttpSUT(config, prompts) as sut:
        for total in (WARMUP, requests):
            loop = ClosedLoop(sut, total)
            cpu, wall = time.process_time(), time.perf_counter()
            loop.issue(min(concurrency, total))
            if not loop.done.wait(600):
                raise SystemExit("the run did not finish in 600 s")
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "cpu_us_per_request": 1e6 * cpu / requests,
        "requests_per_s": requests / wall,
        "failed": loop.failed,
    }


def _parse_child(repeats: int) -> dict[str, Any]:
    """The exchange's per-request CPU without the network: one 32-token chat
    stream read by ``StreamState`` (nothing kept) and counted; the best of
    ``repeats`` timings, so other processes' load filters out."""
    import json as _json
    import timeit

    from infermeter.suts.sse import StreamState
    from infermeter.suts.token_count import TokenTally, count_tokens

    chunks = [
        b"data: " + _json.dumps({"choices": [{"index": 0, "delta": {"content": "tok "}}]}).encode()
        + b"\n\n"
        for _ in range(32)
    ]  # fmt: skip
    chunks.append(b'data: {"choices": [], "usage": {"completion_tokens": 32}}\n\n')
    chunks.append(b"data: [DONE]\n\n")
    tally = TokenTally()

    def one() -> None:
        state = StreamState(keep_text=False)
        for chunk in chunks:
            state.feed(chunk)
        count_tokens(state.finish(), None, tally)

    n = 2000
    best = min(timeit.repeat(one, number=n, repeat=repeats, timer=time.process_time))
    return {
        "cpu_us_per_request": 1e6 * best / n,
        "requests_per_s": n / best,
        "failed": 0,
    }


def _run(src: Path, wire: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    cmd = [sys.executable, __file__, "--child", url, "--wire-a", wire,
           "--requests", str(args.requests), "--concurrency", str(args.concurrency)]  # fmt: skip
    if args.parse_only:
        cmd = [sys.executable, __file__, "--child", "parse", "--parse-only"]
    pin = ["taskset", "-c", "0"] if (os.cpu_count() or 1) > 1 else []
    out = subprocess.run(pin + cmd, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", type=Path, help="source tree A (the before)")
    parser.add_argument("--b", type=Path, help="source tree B (the after)")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--parse-only",
        action="store_true",
        help="time the stream read and count alone (no server, best of 20)",
    )
    for side in ("a", "b"):
        parser.add_argument(
            f"--wire-{side}",
            default="",
            help=f"tree {side.upper()}'s wire (lean or aiohttp; default: the tree's)",
        )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.parse_only:
            print(json.dumps(_parse_child(20)))
        else:
            got = _child(args.child, args.requests, args.concurrency, args.wire_a)
            print(json.dumps(got))
        return
    if args.a is None or args.b is None:
        parser.error("give --a SRC and --b SRC (two source trees)")
    from infermeter.servers.mock import MockConfig, MockProcess

    runs: dict[str, list[float]] = {"A": [], "B": []}
    rates: dict[str, list[float]] = {"A": [], "B": []}
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})  # the server (a child) inherits it
    server = MockProcess(MockConfig(mode="max-throughput", model="mock-model"))
    with contextlib.nullcontext("") if args.parse_only else server as url:
        for r in range(args.rounds):
            order = ("A", "B") if r % 2 == 0 else ("B", "A")
            for name in order:
                src, wire = (
                    (args.a, args.wire_a) if name == "A" else (args.b, args.wire_b)
                )
                got = _run(src, wire, url, args)
                assert got["failed"] == 0, got
                runs[name].append(got["cpu_us_per_request"])
                rates[name].append(got["requests_per_s"])
                print(f"round {r + 1} {name}: {got['cpu_us_per_request']:.1f} us CPU "
                      f"per request, {got['requests_per_s']:.0f} req/s", flush=True)  # fmt: skip
    for name, pick in (("median", statistics.median), ("best", min)):
        a, b = pick(runs["A"]), pick(runs["B"])
        print(f"{name} A {a:.1f} us, B {b:.1f} us per request; B/A {b / a:.3f}")
    if not args.parse_only:
        a, b = statistics.median(rates["A"]), statistics.median(rates["B"])
        print(f"median A {a:.0f} req/s, B {b:.0f} req/s; B/A {b / a:.3f}")


if __name__ == "__main__":
    main()
