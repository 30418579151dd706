"""Does a client measure the simulator's TTFT and TPOT? The default run, checked.

Starts serve-sim in-process (8x H100 SXM, Llama 2 70B), runs the default
run's settings through the openai SUT (real HTTP on loopback), then sets the
run's TTFT/TPOT p50/p99 beside the same percentiles of the simulator's own
per-request timings, and reports the endpoint's late steps.

    .venv/bin/python benchmarks/perfmodel/serve_sim_fidelity.py \
        [--min-duration-s 20] [--chunk-ms 500]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import numpy as np

from infermeter.perfmodel.verdict import percentile_ns
from infermeter.runs.request import RunRequest
from infermeter.runs.run import execute
from infermeter.runs.sim_endpoint import with_sim_defaults
from infermeter.servers.sim import SimConfig, SimServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-duration-s", type=float, default=20.0)
    parser.add_argument("--chunk-ms", type=float, default=500.0)
    args = parser.parse_args()
    defaults = with_sim_defaults(RunRequest(), "llama2-70b")
    server = SimServer(SimConfig(chunk_ms=args.chunk_ms))
    with tempfile.TemporaryDirectory() as tmp, server as url:
        server_app = server.app
        request = dataclasses.replace(
            defaults,
            sut="openai",
            sut_options={"url": url, "model": "llama2-70b"},
            overrides={"min_duration_ms": int(args.min_duration_s * 1000)},
            output_dir=Path(tmp) / "run",
            index=False,
        )
        report = execute(request)
        sim = server_app.sim
        n = sim.cols.n
        first, done, arrival = (sim.cols[k][:n] for k in ("first", "done", "arrival"))
        osl = sim.cols["osl"][:n]
        sim_values = {
            "ttft_ns": first - arrival,
            "tpot_ns": (done - first) // np.maximum(osl - 1, 1),
        }
        m = report.document["metrics"]
        print(f"verdict {report.document['verdict']['result']}, {n} requests")
        for key, values in sim_values.items():
            for p, name in ((0.5, "p50"), (0.99, "p99")):
                ours, theirs = m[key][name] / 1e6, percentile_ns(values, p) / 1e6
                print(
                    f"{key[:4].upper()} {name}: client {ours:8.2f} ms, simulator "
                    f"{theirs:8.2f} ms, diff {ours - theirs:+6.2f} ms "
                    f"({(ours / theirs - 1) * 100:+.2f} %)"
                )
        stats = server_app.stats()
        print(
            f"endpoint: {stats['steps']} steps, {stats['late_steps']} ran > 1 ms late "
            f"(max {stats['max_step_lateness_ms']:.1f} ms)"
        )


if __name__ == "__main__":
    main()
