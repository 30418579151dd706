"""The lines a person reads first: the scenario's figure, the latencies it is
judged on beside their bounds, and the comparison that applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infermeter.throughput import format_rate

NS_PER_MS = 1e6


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    value: str
    note: str = ""
    ok: bool | None = None  # within its bound (None: no bound)


def headline(
    meta: Mapping[str, Any], comparison: Mapping[str, Any] | None
) -> list[Line]:
    """The headline of one run (run.json ``meta``) and its comparison, if any."""
    metrics = _dict(meta.get("metrics"))
    lines = []
    if metrics.get("tokens_per_second"):
        lines.append(
            Line("throughput", f"{format_rate(metrics['tokens_per_second'])} tokens/s")
        )
    elif metrics.get("samples_per_second") is not None:
        unit = "queries/s" if meta.get("scenario") == "Server" else "samples/s"
        lines.append(
            Line("throughput", f"{format_rate(metrics['samples_per_second'])} {unit}")
        )
    requested = _dict(_dict(meta.get("settings")).get("requested"))
    token_run = "ttft_ns" in metrics or "tpot_ns" in metrics
    judged = meta.get("scenario") == "Server"
    if token_run:
        lines.append(
            _p99(
                "TTFT p99",
                metrics.get("ttft_ns"),
                requested.get("ttft_latency") if judged else None,
            )
        )
        lines.append(
            _p99(
                "TPOT p99",
                metrics.get("tpot_ns"),
                requested.get("tpot_latency") if judged else None,
            )
        )
    else:
        bound = requested.get("server_target_latency_ns") if judged else None
        lines.append(_p99("latency p99", metrics.get("latency_ns"), bound))
    best = (comparison or {}).get("best_match_pct")
    if isinstance(best, int | float):
        lines.append(Line("of published", f"{best:.1f} %", "best match, derived"))
    return [line for line in lines if line.value]


def _p99(label: str, series: object, bound_ns: object) -> Line:
    value = _dict(series).get("p99")
    if not isinstance(value, int | float):
        return Line(label, "")
    text = f"{value / NS_PER_MS:,.1f} ms"
    if isinstance(bound_ns, int | float) and bound_ns > 0:
        ok = value <= bound_ns
        return Line(label, text, f"bound {bound_ns / NS_PER_MS:,.0f} ms", ok)
    return Line(label, text)


def latency_bounds_ms(meta: Mapping[str, Any]) -> dict[str, float]:
    """The bounds a Server run is judged on (ms): TTFT and TPOT, or latency."""
    if meta.get("scenario") != "Server":
        return {}
    requested = _dict(_dict(meta.get("settings")).get("requested"))
    named = {
        "TTFT": requested.get("ttft_latency"),
        "TPOT": requested.get("tpot_latency"),
        "latency": requested.get("server_target_latency_ns"),
    }
    return {
        k: v / NS_PER_MS
        for k, v in named.items()
        if isinstance(v, int | float) and v > 0
    }


def sut_name(sut: object) -> str:
    """ "openai my-model", "fake FakeSUT"; the kind once when the name repeats it."""
    if not isinstance(sut, dict):
        return ""
    kind, name = str(sut.get("kind") or ""), str(sut.get("name") or "")
    return (
        name
        if not kind or name.lower().startswith(kind.lower())
        else f"{kind} {name}".strip()
    )


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
