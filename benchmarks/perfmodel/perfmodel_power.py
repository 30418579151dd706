"""Power-bound rates: the fit's own loss and every validation, with and without.

``specs.power_bound`` holds a part to its generation's base part's operations
per watt times its own TDP where its datasheet claims more (B300's FP4, the
H100 PCIe's and NVL's rates, ...). This refits the model on the published v4.1 +
v5.1 rows with the bound off, on Blackwell alone, on Hopper alone and everywhere
(shipped), and prints the line ``perfmodel_ridge.validate`` prints (loss over
all rows and over the v4.1 rows, round out, system out, benchmark out, held-out
Interactive / DeepSeek-R1 / 405B medians). Given a later round's results file
(``perfmodel_next_round.py``), it also prints that round's median / p90 under
each setting's fit. Needs ../shared.

    .venv/bin/python benchmarks/perfmodel/perfmodel_power.py [PATH/summary.json]
"""

from __future__ import annotations

import sys
import time

from perfmodel_ridge import header, load_rounds, validate

from infermeter.perfmodel import specs
from infermeter.perfmodel.calibrate import calibrate_rows, load_results, predict_rows

SHIPPED = dict(specs.POWER_REFERENCE)
SETTINGS = (
    ("off", {}),
    ("Blackwell only", {"blackwell": SHIPPED["blackwell"]}),
    ("Hopper only", {"hopper": SHIPPED["hopper"]}),
    ("everywhere (shipped)", SHIPPED),
)


def use(reference: dict[str, str]) -> None:
    """Bind parts against ``reference`` from now on (the tables are cached)."""
    specs.POWER_REFERENCE.clear()
    specs.POWER_REFERENCE.update(reference)
    specs._bounded_builtin.cache_clear()


def main(later: str | None) -> None:
    both, v41, v51 = load_rounds()
    print(header(f"{'setting':21s}", later=bool(later)))
    for name, reference in SETTINGS:
        use(reference)
        t0 = time.perf_counter()
        text, _, _ = validate(both, v41, v51)
        if later:
            rows = load_results([later])
            o = predict_rows(rows, calibrate_rows(both.rows, "both")).overall()
            text += f" | {o.median * 100:4.1f} / {o.p90 * 100:4.1f}"
        print(f"{name:21s} {text}   ({time.perf_counter() - t0:.0f} s)")
    use(SHIPPED)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
