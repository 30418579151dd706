"""p99 TTFT and TPOT of a replica under Poisson load, from the step model (derived).

The steady-state model (``throughput``) sizes a replica by its mean step. A
service level is a 99th percentile, and at the same mean two effects of random
arrivals push the tail out (the discrete-event simulator, which runs the same
step model request by request, shows both):

- **TTFT**: prompts are prefilled up to ``CHUNK_TOKENS`` a step beside the
  running decodes, so each is ``S`` seconds of queued work (its tokens' share
  of chunk steps plus the base time of the steps it rides), and prompts queue.
  With load ``rho = rate * S`` the wait has the exponential tail of an M/G/1
  queue, P(wait > t) = rho * exp(-2 (1 - rho) t / (S (1 + c^2))) (Kingman),
  ``c`` the spread of prompt lengths. The prompt's own prefill (its chunks'
  steps) adds its length's tail (a p99 prompt is ``P99_PROMPT`` times the
  mean); the two tails add in quadrature (independent).
- **TPOT**: a query's time per token is its steps' mean, and the prefill of
  the prompts that arrive while it decodes lands in those steps: a Poisson
  number in its ``n * step`` seconds, each ``P`` (its tokens' share of chunk
  steps), so the prefill time inside its window has standard deviation
  ``P * sqrt(rate * n * step * (1 + c^2))`` and its time per token
  ``spread / sqrt(n)``, ``spread = P * sqrt(rate * step * (1 + c^2))``.
  Short outputs vary most: over exponential output lengths of mean ``N`` the
  p99 over queries is ``6.96 * spread / sqrt(N)`` above the mean step
  (P(Z > y sqrt(n)) averaged over n ~ Exp(N) is (1 - (1 + 2 / (y^2 N))^-1/2) / 2
  = 1 % at y^2 N = 48.5); over equal lengths ``2.33 * spread / sqrt(N)``;
  between them interpolated in the output lengths' cv^2.

The prompt spread is the simulator's (``arrivals.ISL_SIGMA``); the output spread
is the workload's ``osl_cv`` (the simulator draws outputs with cv 0.8, near the
Llama 2 70B benchmark's 0.75), and the two agree there
(tests/unit/perfmodel/test_latency.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from infermeter.perfmodel.arrivals import ISL_SIGMA, PROMPT_SCV, Z99
from infermeter.perfmodel.roofline import (
    Deployment,
    Efficiency,
    FloatArray,
    step_time_s,
)
from infermeter.perfmodel.specs import Workload
from infermeter.perfmodel.throughput import prefill_tpot_tail, steady_state

TAIL = 0.01  # service levels are 99th percentiles
P99_PROMPT = math.exp(ISL_SIGMA * Z99 - ISL_SIGMA**2 / 2.0)  # p99 / mean prompt
CHUNK_TOKENS = 2048  # prefill tokens per step (the simulator's default)


@dataclass(frozen=True, slots=True)
class Tails:
    """A replica's operating points under Poisson load, one per batch (derived)."""

    batch: FloatArray
    tokens_per_s: FloatArray
    step_s: FloatArray
    ttft_p99_s: FloatArray
    tpot_p99_s: FloatArray
    prompt_s: FloatArray  # queued prefill work per prompt (the M/G/1 service)
    prefill_load: FloatArray  # rho: the share of the replica's time on prefill

    def at_rate(self, tokens_per_s: float) -> tuple[float, float]:
        """p99 TTFT and TPOT (s) where the replica serves ``tokens_per_s``."""
        order = np.argsort(self.tokens_per_s)
        x = self.tokens_per_s[order]
        ttft = float(np.interp(tokens_per_s, x, self.ttft_p99_s[order]))
        tpot = float(np.interp(tokens_per_s, x, self.tpot_p99_s[order]))
        return ttft, tpot

    def held(self, ttft_s: float, tpot_s: float) -> float:
        """Most tokens/s below which every load holds both p99s within bounds (so
        ``at_rate`` of any load up to it does too): a plan's replica never runs
        past it; 0 when the lightest load misses."""
        order = np.argsort(self.tokens_per_s)
        ok = (self.ttft_p99_s[order] <= ttft_s) & (self.tpot_p99_s[order] <= tpot_s)
        misses = np.flatnonzero(~ok)
        last = len(ok) if misses.size == 0 else int(misses[0])
        return float(self.tokens_per_s[order][last - 1]) if last else 0.0

    def capacity(self, ttft_s: float, tpot_s: float) -> tuple[float, int]:
        """Most tokens/s with both p99s within bounds, and its batch; (0, 0) if none."""
        ok = (self.ttft_p99_s <= ttft_s) & (self.tpot_p99_s <= tpot_s)
        if not ok.any():
            return 0.0, 0
        i = int(np.argmax(np.where(ok, self.tokens_per_s, -1.0)))
        return float(self.tokens_per_s[i]), int(self.batch[i])


def _mixed_step(
    dep: Deployment,
    eff: Efficiency,
    wl: Workload,
    b: FloatArray,
    prefill: float,
    isl: float | None = None,
) -> FloatArray:
    """A step of ``b`` decodes and ``prefill`` tokens of prompts ``isl`` long (default
    the mean): its chunks attend to ``isl / 2`` tokens on average."""
    return step_time_s(
        dep,
        eff,
        decode=b * wl.beams,
        sequences=b * wl.beams,
        context=np.full_like(b, wl.resident_context),
        prefill=np.full_like(b, prefill),
        prefill_context=np.full_like(b, (wl.isl_mean if isl is None else isl) / 2.0),
    )


def _pipeline_fill(dep: Deployment, isl: float) -> float:
    """One prompt's latency over its share of a pipelined replica's time: its
    ``C`` chunks pass ``s`` stages one after another, (C + s - 1) / C (the step
    model divides a step over every stage, right for throughput, not latency)."""
    if dep.ep or dep.stages == 1:
        return 1.0
    chunks = max(1, math.ceil(isl / CHUNK_TOKENS))
    return (chunks + dep.stages - 1) / chunks


def _own_prefill(
    dep: Deployment, eff: Efficiency, wl: Workload, b: FloatArray, isl: float
) -> FloatArray:
    """Seconds from a prompt's first chunk to its first token: its chunks' steps
    (a short prompt rides one step with its own tokens), stages filled."""
    chunks = max(1, math.ceil(isl / CHUNK_TOKENS))
    step = _mixed_step(dep, eff, wl, b, min(isl, float(CHUNK_TOKENS)), isl)
    out: FloatArray = chunks * step * _pipeline_fill(dep, isl)
    return out


def tails(dep: Deployment, eff: Efficiency, wl: Workload, scenario: str) -> Tails:
    """p99 TTFT and TPOT at every batch of the steady-state grid (derived)."""
    b, step, thr = steady_state(dep, eff, wl, scenario)
    emitted = wl.spec_tokens(scenario)
    chunk = float(CHUNK_TOKENS)
    full = _mixed_step(dep, eff, wl, b, chunk)
    decode = _mixed_step(dep, eff, wl, b, 0.0)
    rate = thr / wl.osl_mean  # prompts per second
    # A prompt pays its tokens' share of chunk steps plus the base (decode) time
    # of the steps it rides: ISL / CHUNK of them for a long prompt; for a short
    # one a step shared with the prompts that arrived with it (about rate * step
    # of them, as many as the chunk holds).
    marginal = wl.isl_mean * np.maximum(full - decode, 0.0) / chunk
    rides = max(1.0, wl.isl_mean / chunk)
    sharing = np.clip(rate * step, 1.0, max(1.0, chunk / wl.isl_mean))
    service = marginal + decode * rides / sharing
    rho = np.minimum(rate * service, 1.0 - 1e-9)
    mean_wait = service * (1.0 + PROMPT_SCV) / (2.0 * (1.0 - rho))
    wait = np.where(rho > TAIL, mean_wait * np.log(np.maximum(rho, TAIL) / TAIL), 0.0)
    own = _own_prefill(dep, eff, wl, b, wl.isl_mean)
    own_tail = _own_prefill(dep, eff, wl, b, wl.isl_mean * P99_PROMPT) - own
    ttft = own + np.sqrt(wait**2 + own_tail**2)
    tpot = step / emitted + prefill_tpot_tail(wl, rate * step, marginal)
    return Tails(b, thr, step, ttft, tpot, service, rho)
