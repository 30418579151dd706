"""The expert tiles: the fit's own loss, and the validations, with the routed
experts' grouped GEMMs computed in whole row tiles and without.

A mixture-of-experts step computes each expert's tokens in tiles of rows
(``roofline.tile_padding``): the next power of two of the expected rows per
expert, at least 8 and at most a cap (64 as shipped: TensorRT-LLM's tile rule
for its Blackwell MoE kernels). For the shipped cap, the caps either side, one
fixed 128-row tile (DeepGEMM's Hopper alignment) and no tiles, this refits the
model on the published v4.1 + v5.1 rows and prints the line
``perfmodel_ridge.validate`` prints (loss over all rows and over the v4.1 rows,
round out, system out, benchmark out, held-out Interactive / DeepSeek-R1 / 405B
medians), then the padding a DeepSeek-R1 and a Mixtral step pay at a few token
counts. Needs ../shared.

    .venv/bin/python benchmarks/perfmodel/perfmodel_tiles.py
"""

from __future__ import annotations

import time

import numpy as np
from perfmodel_ridge import load_rounds, validate

from infermeter.perfmodel import roofline
from infermeter.perfmodel.specs import get_model

SHIPPED = (roofline.EXPERT_TILE_MIN, roofline.EXPERT_TILE_ROWS)
SETTINGS = (  # (name, smallest tile, largest tile)
    ("shipped (8-64)", SHIPPED[0], SHIPPED[1]),
    ("cap 32", 8.0, 32.0),
    ("cap 128", 8.0, 128.0),
    ("fixed 128", 128.0, 128.0),
    ("no tiles", 1e-9, 1e-9),
)
TOKENS = (1.0, 64.0, 1024.0, 4500.0, 16384.0)


def _set(low: float, high: float) -> None:
    roofline.EXPERT_TILE_MIN, roofline.EXPERT_TILE_ROWS = low, high


def padding() -> None:
    """Computed over held rows of the routed experts, per step size (tokens)."""
    print(
        "## padding (computed rows / held rows) at "
        + ", ".join(f"{t:g}" for t in TOKENS)
    )
    for name, low, high in SETTINGS:
        _set(low, high)
        cells = [
            " ".join(
                f"{x:7.2f}"
                for x in roofline.tile_padding(get_model(m), np.asarray(TOKENS))
            )
            for m in ("deepseek-r1", "mixtral-8x7b")
        ]
        print(f"   {name:<15} deepseek-r1 {cells[0]} | mixtral-8x7b {cells[1]}")
    _set(*SHIPPED)


def main() -> None:
    padding()
    both, v41, v51 = load_rounds()
    print(
        "setting         loss   v4.1  | round out     | system out    | benchmark out |"
        " held out: Interactive / DeepSeek-R1 / 405B"
    )
    for name, low, high in SETTINGS:
        _set(low, high)
        t0 = time.perf_counter()
        text, _, _ = validate(both, v41, v51)
        print(f"{name:<15} {text}   ({time.perf_counter() - t0:.1f} s)")
    _set(*SHIPPED)


if __name__ == "__main__":
    main()
