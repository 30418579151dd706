"""How many streamed 32-token chat answers can the max-throughput mock serve on one core?

The mock (``serve-mock --mode max-throughput --server aiohttp|lean``) runs pinned
to CPU 1; a bare keep-alive client (uvloop streams, one request at a time per
connection, 128-word prompts, usage asked for) runs here on CPU 0. The client
may be the slower side: what counts is the mock's own CPU per answer (its
process's user + system time over the run), so its one-core capacity is
1 / (CPU per answer). ``lean-chunked``: the lean server with ``--chunked``
(one chunk per SSE event). Servers alternate, ``--repeats`` times; medians.

    python benchmarks/client/mock_capacity.py [--servers aiohttp,lean,lean-chunked]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

from side_by_side_runs import OUT_TOKENS, Mock, process_cpu_s, prompt_texts

DONE = b"data: [DONE]\n\n"


def _requests(n: int) -> list[bytes]:
    out = []
    for text in prompt_texts(n):
        body = json.dumps(
            {
                "model": "m",
                "messages": [{"role": "user", "content": text}],
                "max_tokens": OUT_TOKENS,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        ).encode()
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: mock\r\n"
        head += b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
            body
        )
        out.append(head + body)
    return out


async def _connection(port: int, requests: list[bytes]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for request in requests:
        writer.write(request)
        await reader.readuntil(DONE)
    writer.close()


async def _load(port: int, requests: list[bytes], connections: int) -> None:
    await asyncio.gather(
        *(_connection(port, requests[i::connections]) for i in range(connections))
    )


def measure(
    server: str, requests: list[bytes], connections: int
) -> tuple[float, float]:
    """(client req/s, the mock's CPU µs per answer)."""
    mock = Mock(server.removesuffix("-chunked"), chunked=server.endswith("-chunked"))
    try:
        port = int(mock.url.rsplit(":", 1)[1].split("/")[0])
        cpu = process_cpu_s(mock.proc.pid)
        start = time.perf_counter()
        uvloop.run(_load(port, requests, connections))
        wall = time.perf_counter() - start
        spent = process_cpu_s(mock.proc.pid) - cpu
    finally:
        mock.stop()
    return len(requests) / wall, 1e6 * spent / len(requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="aiohttp,lean,lean-chunked")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    requests = _requests(args.requests)
    seen: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.repeats):
        for server in args.servers.split(","):
            seen.setdefault(server, []).append(
                measure(server, requests, args.connections)
            )
    print(
        f"{'server':<13} {'client req/s':>12} {'mock µs/answer':>15} {'1-core capacity':>16}"
    )
    for server, runs in seen.items():
        rate = statistics.median(r for r, _ in runs)
        cost = statistics.median(c for _, c in runs)
        print(f"{server:<13} {rate:>12.0f} {cost:>15.1f} {1e6 / cost:>14.0f}/s")


if __name__ == "__main__":
    main()
