"""Requests/s for 1, 2, 4, 8 client processes or Ray actors against a multi-process mock.

A max-throughput mock server (``--server-workers`` processes on one port,
SO_REUSEPORT) answers streamed completions at once; the client runs a closed
loop at ``--concurrency`` for ``--requests`` requests per point and reports
completed requests/s, client CPU per 1,000 requests and send lateness. Use a
machine with at least (clients + server workers) cores: with fewer, the
clients and the server share cores and the table shows the machine, not the
client. Ray points run on a private local cluster (127.0.0.1, no dashboard).

    python benchmarks/client/client_scaling.py --transport process \
        --clients 1,2,4,8 --server-workers 6
    python benchmarks/client/client_scaling.py --transport ray --clients 1,2,4 --server-workers 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
from pathlib import Path
from typing import Any

from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.suts.http_factory import create_http_sut
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts

ISL, OSL = 128, 32


def point(
    url: str, transport: str, clients: int, args: argparse.Namespace
) -> dict[str, Any]:
    """One SUT with ``clients`` clients (started untimed); ``--repeats`` measured loads."""
    if transport == "ray":
        config = OpenAIConfig(
            url=url, model="mock-model", ray="local", ray_actors=clients
        )
    else:
        config = OpenAIConfig(url=url, model="mock-model", workers=clients)
    prompts = SyntheticPrompts(1024, input_tokens=ISL, output_tokens=OSL)
    rates, cpus, late = [], [], []
    with create_http_sut(config, prompts) as sut:
        for _ in range(args.repeats):
            spec = LoadSpec(
                mode="concurrency",
                concurrency=args.concurrency,
                requests=args.requests,
                warmup_requests=min(1000, args.requests // 5),
            )
            result = run_load(sut, spec, sample_count=1024)
            m, cert = result.metrics, result.certification
            rates.append(m.completed / cert.wall_s)
            cpus.append(cert.cpu_s_per_1000)
            late.append(cert.send_lateness_ns.get("p99", 0) / 1e6)
    return {
        "transport": transport,
        "clients": clients,
        "requests_per_s": round(statistics.median(rates), 1),
        "cpu_s_per_1000": round(statistics.median(cpus), 3),
        "send_lateness_p99_ms": round(statistics.median(late), 3),
        "rates": [round(r, 1) for r in rates],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transport", choices=("process", "ray"), default="process")
    parser.add_argument("--clients", default="1,2,4,8")
    parser.add_argument(
        "--server-workers", type=int, default=max(1, (os.cpu_count() or 2) // 2)
    )
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    mock = MockConfig(mode="max-throughput", model="mock-model")
    rows = []
    with MockProcess(mock, workers=args.server_workers) as url:
        for clients in (int(c) for c in args.clients.split(",")):
            rows.append(point(url, args.transport, clients, args))
            print(json.dumps(rows[-1]), flush=True)
    report = {
        "date": dt.date.today().isoformat(),
        "machine": os.uname().nodename,
        "cpus": os.cpu_count(),
        "server_workers": args.server_workers,
        "concurrency": args.concurrency,
        "requests": args.requests,
        "isl_osl": [ISL, OSL],
        "rows": rows,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
