"""Per-chunk cost of the stream parser (suts/sse.py), in-process, for A/B checks.

Feeds one streamed completions answer (N token chunks, a finish chunk, a usage
chunk, [DONE]) to ``StreamState`` many times and reports the best of several
rounds in microseconds per answer and nanoseconds per chunk. In-process and
single-threaded, so a busy machine moves it far less than an HTTP benchmark;
compare two versions side by side by pointing PYTHONPATH at each ``src``.

    PYTHONPATH=src python benchmarks/client/sse_parse_cost.py --chunks 32
"""

from __future__ import annotations

import argparse
import json
import time

from infermeter.suts.sse import StreamState


def stream(chunks: int) -> bytes:
    head = '{"id":"x","object":"text_completion","created":0,"model":"m",'
    parts = [
        f'data: {head}"choices":[{{"index":0,"text":"tok ","finish_reason":null}}]}}\n\n'
        for _ in range(chunks)
    ]
    parts.append(
        f'data: {head}"choices":[{{"index":0,"text":"","finish_reason":"length"}}]}}\n\n'
    )
    usage = {"choices": [], "usage": {"completion_tokens": chunks}}
    parts.append("data: " + json.dumps(usage) + "\n\n")
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def best_us(body: bytes, answers: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(answers):
            state = StreamState(keep_text=False)
            state.feed(body)
            state.finish()
        best = min(best, (time.perf_counter() - start) / answers * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    us = best_us(stream(args.chunks), args.answers, args.rounds)
    per_chunk_ns = us * 1000 / (args.chunks + 3)
    print(
        json.dumps(
            {
                "chunks": args.chunks,
                "us_per_answer": round(us, 2),
                "ns_per_chunk": round(per_chunk_ns, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
