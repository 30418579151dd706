"""How close the client's TTFT, TPOT and tokens/s come to what the timed mock was told.

The mock answers every request after TTFT, then one token every ITL (or
draws them from distributions, replayed here from its seed). Each figure is
printed beside the configured one with the relative error. A busy machine
inflates the measured side (the server's sleeps and the client's wake-ups
run late), which is why this is a benchmark and not a test: the tests check
the bounds no delay can break (never faster than the server, the first
token before the last).

    python benchmarks/client/mock_fidelity.py              # constant and random timings
"""

from __future__ import annotations

import numpy as np

from infermeter.runs.load import LoadSpec, run_load
from infermeter.servers.mock import MockConfig, MockProcess
from infermeter.servers.timing import Distribution, DistributionTiming, MockRequest
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import OpenAIConfig
from infermeter.suts.prompts import SyntheticPrompts

TTFT_S, ITL_S, OUT, USERS = 0.200, 0.020, 20, 8


def _row(name: str, measured: float, configured: float) -> None:
    error = (measured - configured) / configured * 100
    print(f"{name:<28}{measured:>12.4f}{configured:>12.4f}{error:>+9.2f} %")


def constant() -> None:
    cfg = MockConfig(mode="timed", ttft=f"const:{TTFT_S}", itl=f"const:{ITL_S}")
    spec = LoadSpec(
        mode="concurrency", concurrency=USERS, requests=32, warmup_requests=8
    )
    prompts = SyntheticPrompts(16, input_tokens=8, output_tokens=OUT)
    with (
        MockProcess(cfg) as url,
        OpenAIHttpSUT(OpenAIConfig(url=url, model="m"), prompts) as sut,
    ):
        m = run_load(sut, spec, sample_count=16).metrics
    per_request_s = TTFT_S + (OUT - 1) * ITL_S
    _row("TTFT median (s)", float(np.median(m.ttft_ns)) / 1e9, TTFT_S)
    _row("TPOT median (s)", float(np.median(m.tpot_ns)) / 1e9, ITL_S)
    _row("system tokens/s", m.system_tps, USERS * OUT / per_request_s)
    _row("tokens/s per user (p90)", m.tps_per_user or 0.0, 1 / ITL_S)


def random_timings() -> None:
    ttft, itl, out, warm, n = "uniform:0.16,0.24", "normal:0.02,0.004", 8, 16, 128
    cfg = MockConfig(mode="timed", ttft=ttft, itl=itl, seed=11)
    spec = LoadSpec(
        mode="concurrency", concurrency=16, requests=n, warmup_requests=warm
    )
    prompts = SyntheticPrompts(16, input_tokens=8, output_tokens=out)
    with (
        MockProcess(cfg) as url,
        OpenAIHttpSUT(OpenAIConfig(url=url, model="m"), prompts) as sut,
    ):
        m = run_load(sut, spec, sample_count=16).metrics
    # The server draws one plan per request in arrival order from its seed.
    timing = DistributionTiming(
        ttft_s=Distribution.parse(ttft), itl_s=Distribution.parse(itl), seed=11
    )
    plans = [timing.plan(MockRequest(8, out)) for _ in range(warm + n)][warm:]
    drawn_ttft = float(np.mean([p.ttft_s for p in plans]))
    drawn_tpot = float(
        np.mean([np.mean(p.gaps_s) for p in plans if p.gaps_s is not None])
    )
    _row("random TTFT mean (s)", float(np.mean(m.ttft_ns)) / 1e9, drawn_ttft)
    _row("random TPOT mean (s)", float(np.mean(m.tpot_ns)) / 1e9, drawn_tpot)


def main() -> None:
    print(f"{'figure':<28}{'measured':>12}{'configured':>12}{'error':>11}")
    constant()
    random_timings()


if __name__ == "__main__":
    main()
