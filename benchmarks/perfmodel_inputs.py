"""Figures docs/perfmodel.md quotes about the model's inputs, re-derived.

1. DeepSeek-R1's output spread: a lognormal through the reference outputs'
   median (2,194) and p90 (9,477), capped at 32,768 like the dataset, against
   the data's mean (4,043) and samples at the cap (48 of 4,388); its cv is the
   shipped ``osl_cv``.
2. The calibrated speed factors (shipped fit of v4.1 + v5.1) that the docs
   quote, with what they make of the part's peaks (compute 0.6 k, memory 0.9 k).
   Run it at an older commit for that commit's factors.

    .venv/bin/python benchmarks/perfmodel_inputs.py
"""

from __future__ import annotations

import math

import numpy as np

from infermeter.perfmodel.calibrate import load_coefficients
from infermeter.perfmodel.fit import speed_features
from infermeter.perfmodel.roofline import Efficiency
from infermeter.perfmodel.specs import get_workload

MEDIAN, P90, CAP, SAMPLES = 2194.0, 9476.7, 32768.0, 4388
SPEEDS = [
    ("h200-sxm", "trt-llm", "fp8", "llama2-70b"),
    ("h100-sxm", "trt-llm", "fp16", "llama2-70b"),
    ("h100-sxm", "trt-llm", "fp8", "llama2-70b"),
    ("b200", "trt-llm", "fp4", "llama2-70b"),
    ("b200", "trt-llm", "fp4", "deepseek-r1"),
]


def deepseek_spread(n: int = 4_000_000) -> None:
    sigma = math.log(P90 / MEDIAN) / 1.2815516  # z of the 90th percentile
    x = np.minimum(np.random.default_rng(1).lognormal(math.log(MEDIAN), sigma, n), CAP)
    print(
        f"## 1. DeepSeek-R1 outputs: lognormal sigma {sigma:.3f} capped at {CAP:,.0f}:"
        f" mean {x.mean():,.0f} (data 4,043), {np.mean(x >= CAP) * SAMPLES:.0f} of"
        f" {SAMPLES:,} at the cap (data 48), cv {x.std() / x.mean():.2f}"
        f" (shipped osl_cv {get_workload('deepseek-r1').osl_cv})"
    )


def speed_factors() -> None:
    coef, base = load_coefficients(), Efficiency()
    print(f"## 2. speed factors k ({coef.label})")
    for part, stack, prec, bench in SPEEDS:
        k = math.exp(coef.log_speed(speed_features(part, stack, prec, bench)))
        print(
            f"   {part} {stack} {prec} {bench}: k {k:.2f} (compute {base.compute * k:.2f}"
            f", memory {base.memory * k:.2f} of peak)"
        )


if __name__ == "__main__":
    deepseek_spread()
    speed_factors()
