"""How many text chunks a server streams against the tokens its usage counts.

Sends ``--requests`` streamed /v1/completions at once (``max_tokens`` each,
usage asked for) and prints, per request, the chunks that carried text and the
usage's completion_tokens: a server that drops stream chunks under concurrency
shows fewer chunks than usage (a byte-level model streams one chunk a token).

    python benchmarks/client/stream_probe.py --url http://127.0.0.1:8077/v1 --model DIR
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random

import aiohttp


async def one(
    session: aiohttp.ClientSession, args: argparse.Namespace, seed: int
) -> tuple[int, int | None]:
    rng = random.Random(seed)
    body = {
        "model": args.model,
        "prompt": "".join(rng.choice("abcdefgh ") for _ in range(args.prompt_chars)),
        "max_tokens": args.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks, usage = 0, None
    async with session.post(f"{args.url}/completions", json=body) as resp:
        async for line in resp.content:
            if not line.startswith(b"data: {"):
                continue
            event = json.loads(line[6:])
            choices = event.get("choices") or []
            chunks += bool(choices and choices[0].get("text"))
            usage = (event.get("usage") or {}).get("completion_tokens", usage)
    return chunks, usage


async def probe(args: argparse.Namespace) -> list[tuple[int, int | None]]:
    async with aiohttp.ClientSession() as session:
        return await asyncio.gather(
            *(one(session, args, i) for i in range(args.requests))
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--prompt-chars", type=int, default=128)
    args = parser.parse_args()
    results = asyncio.run(probe(args))
    for i, (chunks, usage) in enumerate(results):
        print(json.dumps({"request": i, "text_chunks": chunks, "usage_tokens": usage}))
    empty = sum(1 for chunks, usage in results if chunks == 0 and usage)
    short = sum(1 for chunks, usage in results if usage and 0 < chunks < usage)
    print(
        json.dumps(
            {
                "requests": len(results),
                "no_text_with_usage": empty,
                "fewer_chunks_than_usage": short,
            }
        )
    )


if __name__ == "__main__":
    main()
