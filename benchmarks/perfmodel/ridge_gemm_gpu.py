"""The soft ridge measured on a GPU: GEMM time across the ridge point against the
roofline of the same GPU's measured roofs (needs CUDA and torch; device machine).

The performance model takes an operator group's time as the p-norm of its compute
and memory times (``roofline.ridge``, p = 1.5 chosen by the fit's loss over the
published rows). This measures it directly: a weight matrix ``K x N`` (a 70B-class
layer) times ``M`` tokens, M from 1 to 16,384, in BF16 and (where supported) FP8.
The roofs are measured on the same GPU: compute, the largest GEMM's FLOP/s;
memory, a device-to-device copy's bytes/s. For each M it prints the time, the
compute and memory times at those roofs, and the time over the hard roofline
(max of the two); then the p whose p-norm fits all M best (least squares on the
log time) and the measured ratio at the M nearest the ridge (where p-norm gives
2^(1/p)). Derived figures, one GPU.

    python3 benchmarks/perfmodel/ridge_gemm_gpu.py [--k 8192] [--n 28672]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import torch

MS = (1, 4, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384)
PS = [1.0 + 0.05 * i for i in range(141)]  # 1 .. 8


def _time_ms(call: Callable[[], object], reps: int = 30) -> float:
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = (
            torch.cuda.Event(enable_timing=True),
            torch.cuda.Event(enable_timing=True),
        )
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def copy_bandwidth() -> float:
    """Bytes/s of a 4 GiB device-to-device copy (read + write)."""
    x = torch.empty(1 << 31, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    ms = _time_ms(lambda: y.copy_(x), reps=10)
    return 2 * x.numel() * 2 / (ms / 1e3)


def gemm(m: int, k: int, n: int, dtype: str) -> tuple[float, int]:
    """Median ms of ``(m x k) @ (k x n)`` and the bytes it must move."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    if dtype == "bf16":
        ms = _time_ms(lambda: a @ w.t())
        return ms, 2 * (m * k + k * n + m * n)
    a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    ms = _time_ms(
        lambda: torch._scaled_mm(a8, w8.t(), one, one, out_dtype=torch.bfloat16)
    )
    return ms, m * k + k * n + 2 * m * n


def ridge(c: float, m: float, p: float) -> float:
    hi = max(c, m)
    return hi * ((c / hi) ** p + (m / hi) ** p) ** (1 / p)


def sweep(k: int, n: int, dtype: str, bw: float) -> None:
    rows = [(m, *gemm(m, k, n, dtype)) for m in MS]
    peak = max(2 * m * k * n / (ms / 1e3) for m, ms, _ in rows)
    print(
        f"\n{dtype}: K {k}, N {n}; roofs: {peak / 1e12:.0f} TFLOP/s (largest GEMM), "
        f"{bw / 1e12:.2f} TB/s (copy)"
    )
    print(
        f"{'M':>6} {'ms':>8} {'compute ms':>11} {'memory ms':>10} {'/ hard roof':>12}"
    )
    fit = []
    for m, ms, nbytes in rows:
        c = 2 * m * k * n / peak * 1e3
        mem = nbytes / bw * 1e3
        fit.append((ms, c, mem))
        print(f"{m:>6} {ms:8.3f} {c:11.3f} {mem:10.3f} {ms / max(c, mem):12.2f}")
    err = {
        p: sum((math.log(ms) - math.log(ridge(c, mem, p))) ** 2 for ms, c, mem in fit)
        for p in PS
    }
    best = min(err, key=err.__getitem__)
    near = min(fit, key=lambda r: abs(math.log(r[1] / r[2])))
    print(
        f"best p {best:.2f} (rms log error {math.sqrt(err[best] / len(fit)):.3f}; "
        f"hard roofline {math.sqrt(err[PS[-1]] / len(fit)):.3f}); nearest the ridge: "
        f"{near[0] / max(near[1], near[2]):.2f}x the hard roofline "
        f"(p 1.5 says {ridge(near[1], near[2], 1.5) / max(near[1], near[2]):.2f}x)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--n", type=int, default=28672)
    args = ap.parse_args()
    print(torch.cuda.get_device_name(0), "torch", torch.__version__)
    bw = copy_bandwidth()
    for dtype in ("bf16", "fp8"):
        try:
            sweep(args.k, args.n, dtype, bw)
        except (RuntimeError, AttributeError) as exc:  # no FP8 GEMM on this part
            print(f"\n{dtype}: not run ({exc})")


if __name__ == "__main__":
    main()
