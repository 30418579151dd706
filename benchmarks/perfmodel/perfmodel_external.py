"""The performance model against throughput published outside the rows it fits.

1. **TensorRT-LLM's performance overview** (NVIDIA/TensorRT-LLM,
   ``docs/source/developer-guide/perf-overview.md`` at commit 03e27c7d5ff0): output
   tokens/s per GPU of ``trtllm-bench throughput``, every request queued at once,
   one fixed input/output length per run, options left at their defaults. These
   are lengths MLPerf never runs (up to 32,768 tokens in or out). The model's
   figure is the steady state of the same GPUs at those lengths, Offline, at the
   shipped fit's speed for the part, TensorRT-LLM and the benchmark (no finite
   run: every request has the same length). Llama 3.3 70B runs on Llama 2 70B's
   architecture and fitted effects (the same 80 layers, width and 8 KV heads; its
   128 k vocabulary adds about 2 % of the weights).
2. **MLPerf Inference v6.0, announced**: NVIDIA's per-GPU figures for the GB300
   NVL72 rack (72 GPUs) in its v6.0 announcement of 2026-04-01, as tabulated by
   Wccftech ("NVIDIA Is Among The First To Submit MLPerf Inference v6.0
   Benchmarks"); the v5.1 figures beside them there equal the v5.1 rows of that
   rack (result 5.1-0072) in the shared file. The v6.0 results file is not in the
   shared data and the announcement gives no result IDs. The model predicts each
   v5.1 row again as a row of round v6.0 with the shipped fit (v4.1 + v5.1): only
   the benchmark's age in rounds changes.

Both are infermeter results (unverified) beside published figures; the model's
are derived. Part 3 prints the published Server/Offline ratio per benchmark and round
(how a benchmark's Server derate moved between the rounds read). Needs ../shared for
parts 2 and 3 (part 1 runs without it).

    .venv/bin/python benchmarks/perfmodel/perfmodel_external.py
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.calibrate import efficiency_for, load_coefficients
from infermeter.perfmodel.fit import predict_log, prepare
from infermeter.perfmodel.published import PublishedRow, read_rows, round_file
from infermeter.perfmodel.specs import get_accelerator, get_model, get_workload
from infermeter.perfmodel.throughput import (
    SystemSpec,
    deployments,
    replica_throughput,
)

# Output tok/s per GPU: model, part, precision, GPUs, then input/output tokens=figure
# (a long line goes on in a second line of the same model, part, precision, GPUs).
# The last line holds gpt-oss-120b's H200 figures against 8-bit experts, as the
# model held them before it kept an FP4 checkpoint's experts 4-bit there.
OVERVIEW_TABLE = """
deepseek-r1 b200 fp4 4 1000/1000=6463 1024/8192=3862 1024/32768=1451 8192/1024=1168
deepseek-r1 gb200 fp4 4 1000/1000=6939 1024/8192=4379 1024/32768=1465 8192/1024=1192
deepseek-r1 h200-sxm fp8 8 1000/1000=1627 1024/8192=1218 1024/32768=438
llama2-70b b200 fp4 1 1000/1000=6920 1024/8192=3242 8192/1024=1362 32768/1024=274
llama2-70b gb200 fp4 1 1000/1000=7769 1024/8192=3805 8192/1024=1491 32768/1024=302
llama2-70b h200-sxm fp8 2 1000/1000=2587 1024/8192=2009 8192/1024=537 32768/1024=120
llama2-70b h100-sxm fp8 2 1000/1000=2209 8192/1024=398
gpt-oss-120b b200 fp4 2 1000/1000=25943 1024/8192=17289 1024/32768=6279
gpt-oss-120b b200 fp4 2 8192/1024=6111 32768/1024=1392
gpt-oss-120b h200-sxm fp4 1 1000/1000=6868 1024/8192=3543 8192/1024=1828 32768/1024=519
gpt-oss-120b h200-sxm fp8 1 1000/1000=6868 1024/8192=3543 8192/1024=1828 32768/1024=519
"""


def overview_table() -> list[tuple[str, str, str, int, dict[tuple[int, int], int]]]:
    """``OVERVIEW_TABLE`` as (model, part, precision, GPUs, {(in, out): tok/s})."""
    table: dict[tuple[str, str, str, int], dict[tuple[int, int], int]] = {}
    for line in OVERVIEW_TABLE.strip().splitlines():
        bench, part, prec, gpus, *points = line.split()
        figures = table.setdefault((bench, part, prec, int(gpus)), {})
        for point in points:
            lengths, value = point.split("=")
            isl, osl = lengths.split("/")
            figures[(int(isl), int(osl))] = int(value)
    return [(*key, figures) for key, figures in table.items()]


SHOWN_AS = {"llama2-70b": "llama3.3-70b"}  # the overview's model, where it differs

# GB300 NVL72, tokens/s per GPU: (benchmark, scenario, v5.1, v6.0) as announced.
V60 = (
    ("deepseek-r1", "Offline", 5842, 9821),
    ("deepseek-r1", "Server", 2907, 8064),
    ("llama3.1-405b", "Offline", 224, 271),
    ("llama3.1-405b", "Server", 170, 259),
)
V60_RESULT = "5.1-0072"  # the v5.1 rows of the same rack in the shared file


def steady_per_gpu(
    bench: str, part: str, prec: str, gpus: int, isl: int, osl: int
) -> float:
    """Steady-state Offline output tokens/s per GPU at fixed lengths, at the shipped
    fit's speed for the part, TensorRT-LLM and the benchmark."""
    acc, arch = get_accelerator(part), get_model(bench)
    wl = dataclasses.replace(
        get_workload(bench), isl_mean=float(isl), osl_mean=float(osl), osl_cv=0.0
    )
    eff = efficiency_for(
        part, prec, stack="trt-llm", benchmark=bench, scenario="Offline"
    )
    best = 0.0
    for dep in deployments(SystemSpec(acc, gpus, arch, prec)):
        tok_s, _, _, _ = replica_throughput(dep, wl, "Offline", eff)
        best = max(best, tok_s * (gpus // dep.tp) / gpus)
    return best


def _geo(ratios: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def overview() -> None:
    print("1. TensorRT-LLM performance overview: output tok/s per GPU (trtllm-bench)")
    print(
        f"{'model':14s} {'part':9s} {'GPUs':>4s} {'in/out':>12s} "
        f"{'published':>9s} {'model':>7s} {'model/pub':>9s}"
    )
    groups: list[tuple[str, list[float]]] = []
    for bench, part, prec, gpus, points in overview_table():
        ratios = []
        for (isl, osl), pub in points.items():
            got = steady_per_gpu(bench, part, prec, gpus, isl, osl)
            ratios.append(got / pub)
            print(
                f"{SHOWN_AS.get(bench, bench):14s} {part:9s} {gpus:4d} "
                f"{f'{isl}/{osl}':>12s} {pub:9,d} {got:7,.0f} {got / pub:9.2f}"
            )
        groups.append((f"{SHOWN_AS.get(bench, bench)} {part} {prec.upper()}", ratios))
    print("\nper model and part: geometric mean of model/published (range)")
    for name, ratios in groups:
        print(
            f"  {name:30s} {_geo(ratios):5.2f}  ({min(ratios):.2f}-{max(ratios):.2f})"
        )


def _v51_rows() -> dict[tuple[str, str], PublishedRow]:
    rows = read_rows(round_file("v5.1")).rows
    return {(r.benchmark, r.scenario): r for r in rows if r.result_id == V60_RESULT}


def announced_v60() -> None:
    print(
        "\n2. GB300 NVL72 (72 GPUs): tok/s per GPU, v5.1 rows and NVIDIA's "
        "announced v6.0 figures"
    )
    print(
        f"{'benchmark':14s} {'scenario':8s} {'v5.1 pub':>8s} {'model':>6s} "
        f"{'v6.0 pub':>8s} {'model':>6s} {'model/pub':>9s}"
    )
    coef = load_coefficients()  # the shipped fit: v4.1 + v5.1
    rows = _v51_rows()
    for bench, scenario, v51, v60 in V60:
        row = rows[(bench, scenario)]
        assert round(row.tokens_per_s / row.count) == v51, (row, v51)
        at = {}
        for rnd in ("v5.1", "v6.0"):
            (prepared,), _ = prepare([dataclasses.replace(row, round=rnd)])
            at[rnd] = math.exp(predict_log(prepared, coef)) / row.count
        print(
            f"{bench:14s} {scenario:8s} {v51:8,d} {at['v5.1']:6,.0f} "
            f"{v60:8,d} {at['v6.0']:6,.0f} {at['v6.0'] / v60:9.2f}"
        )


def server_share_by_round() -> None:
    """Median Server/Offline over the systems with both, per benchmark and round."""
    print("\n3. Server / Offline tokens/s of one system, median over systems")
    pairs: dict[tuple[str, str], dict[tuple[object, ...], dict[str, float]]] = {}
    for tag in ("v4.1", "v5.1"):
        for r in read_rows(round_file(tag)).rows:
            key = (r.accelerator, r.count, r.stack, r.precision, r.submitter)
            pairs.setdefault((r.benchmark, tag), {}).setdefault(key, {})[r.scenario] = (
                r.tokens_per_s
            )
    for (bench, tag), systems in sorted(pairs.items()):
        shares = [
            v["Server"] / v["Offline"]
            for v in systems.values()
            if len(v) > 1 and "Server" in v and "Offline" in v
        ]
        if shares:
            print(
                f"  {bench:14s} {tag}  {statistics.median(shares):.2f}  "
                f"({len(shares)} systems)"
            )


def main() -> None:
    np.seterr(all="ignore")
    overview()
    try:
        announced_v60()
        server_share_by_round()
    except ConfigError as exc:  # parts 2 and 3 read the shared files
        print(f"\n2. skipped: {exc}")


if __name__ == "__main__":
    main()
