"""What a finite MLPerf run reports, against the steady state the roofline gives.

LoadGen divides the run's tokens by its length (spec mlperf-loadgen.md, section 4,
"Throughput" and "Query pre-generation"), and a run ends only when its outputs
have been decoded, one step per token however the batch is scheduled:

- **Offline** issues every sample at once: ``max(set, 1.1 x 600 s x QPS)`` samples,
  padded to whole sets (equal issue), and reports tokens / the time the last one
  completes. A run of ``W`` seconds at a step of ``s`` has ``W / s`` steps; an
  output longer than that (DeepSeek-R1's reference outputs run to 32,768 tokens,
  about 1 % of them) keeps decoding after the full batch has run out of work.
  Longest first is the best order (Offline sees every sample up front): the
  longest outputs start at once, and after the full-batch steps those longer than
  ``u`` tokens, ``n x P(OSL > u)`` of a replica's ``n`` samples, decode on in a
  shrinking batch until the longest is done.
- **Server and Interactive** issue queries at the scheduled rate until the
  schedule spans 600 s, in whole sets, and report tokens / the time the last
  issued query completes. That query still decodes its own output when the
  schedule ends, in a batch that drains as the others finish: the queries in
  flight have the equilibrium distribution of what remains of their outputs,
  ``P(residual > u) = integral of P(OSL > x) from u / E[OSL]``. The expected
  share ``T / (T + L)`` is taken over the last query's length.

Output lengths are lognormal with the workload's mean and cv, capped at its
``osl_max`` (the cap holds the mass above it). Nothing here is fitted: the run
rules are LoadGen's, the lengths the benchmark's. It matters where outputs are
long against the run: DeepSeek-R1; for the other benchmarks it is a few percent
of Server at most (a 294-token Llama 2 70B output against a 600 s run).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist

import numpy as np

from infermeter.perfmodel.roofline import (
    Deployment,
    Efficiency,
    FloatArray,
    step_time_s,
)
from infermeter.perfmodel.specs import Workload

MIN_DURATION_S = 600.0  # mlperf.conf min_duration for Offline and Server
OFFLINE_MARGIN = 1.1  # Offline pre-generates 1.1 x min_duration at the expected QPS
_GRID = 257  # output-length grid for the distribution
_DRAIN_POINTS = 16  # quadrature over a drain
_LAST_QUANTILES = 16  # equal-probability lengths of the last Server query


@dataclass(frozen=True)
class OutputLengths:
    """A workload's output-length distribution on a grid of ``u`` tokens (the cap
    holds the mass above ``osl_max``: the survival drops to 0 there)."""

    u: FloatArray
    survival: FloatArray  # P(OSL > u)
    residual: FloatArray  # P(residual > u) of a query in flight
    last: FloatArray  # equal-probability quantiles of one query's length


@cache
def _lengths(osl_mean: float, osl_cv: float, osl_max: int) -> OutputLengths:
    s2 = math.log1p(osl_cv**2)
    sigma, mu = math.sqrt(s2), math.log(osl_mean) - s2 / 2.0
    u = np.linspace(0.0, float(osl_max), _GRID)
    z = (np.log(np.maximum(u, 1e-9)) - mu) / (sigma * math.sqrt(2.0))
    survival = np.asarray([0.5 * math.erfc(v) for v in z])
    survival[0], survival[-1] = 1.0, 0.0
    # Integral of the survival from u to the cap (trapezoids), normalised.
    seg = (survival[1:] + survival[:-1]) / 2.0 * np.diff(u)
    tail = np.concatenate([np.cumsum(seg[::-1])[::-1], [0.0]])
    probs = (np.arange(_LAST_QUANTILES) + 0.5) / _LAST_QUANTILES
    quantiles = np.asarray([NormalDist(mu, sigma).inv_cdf(p) for p in probs])
    last = np.minimum(np.exp(quantiles), float(osl_max))
    return OutputLengths(u, survival, tail / tail[0], last)


def lengths(wl: Workload) -> OutputLengths:
    """``wl``'s output lengths: lognormal (its mean and cv), capped at ``osl_max``."""
    return _lengths(wl.osl_mean, wl.osl_cv, wl.osl_max)


def offline_samples(wl: Workload, qps: FloatArray) -> FloatArray:
    """Samples an Offline run issues at ``qps`` expected (whole sets)."""
    want = np.maximum(float(wl.samples), OFFLINE_MARGIN * MIN_DURATION_S * qps)
    out: FloatArray = np.ceil(want / wl.samples) * wl.samples
    return out


def server_span_s(wl: Workload, qps: FloatArray) -> FloatArray:
    """Seconds a Server run's schedule spans at ``qps``: whole sets, at least 600 s."""
    set_s = wl.samples / np.maximum(qps, 1e-12)
    out: FloatArray = set_s * np.maximum(1.0, np.ceil(MIN_DURATION_S / set_s))
    return out


@dataclass(frozen=True)
class Operating:
    """One replica shape's steady state per speed: tokens/s per replica (both
    pools where disaggregated), the decode batch and its step, and the replicas."""

    dep: Deployment
    eff: Efficiency
    speed: FloatArray
    tokens_per_s: FloatArray
    batch: FloatArray
    step_s: FloatArray
    replicas: int

    def decode_steps(
        self, active: FloatArray, context: FloatArray | float, draft: int = 0
    ) -> FloatArray:
        """Decode-only step times at ``active`` sequences (broadcast on the last axis)."""
        sp = self.speed[..., None] * np.ones_like(active)
        zero = np.zeros_like(active)
        return step_time_s(
            self.dep,
            self.eff,
            decode=active * (1.0 + draft),
            sequences=active,
            context=context + zero,
            prefill=zero,
            prefill_context=zero,
            compute_eff=self.eff.compute * sp,
            memory_eff=self.eff.memory * sp,
        )


def reported(op: Operating, wl: Workload, scenario: str) -> FloatArray:
    """Tokens/s per replica as LoadGen reports a run at ``op``'s steady state."""
    out = np.array(op.tokens_per_s, dtype=float)
    ok = (op.tokens_per_s > 0) & (op.step_s > 0) & (op.batch > 0)
    if not np.any(ok):
        return out
    part = Operating(
        op.dep,
        op.eff,
        op.speed[ok],
        op.tokens_per_s[ok],
        op.batch[ok],
        op.step_s[ok],
        op.replicas,
    )
    share = (
        _offline_share(part, wl)
        if wl.limits(scenario) is None
        else _server_share(part, wl, scenario)
    )
    out[ok] = out[ok] * share
    return out


def _offline_share(op: Operating, wl: Workload) -> FloatArray:
    """Offline: the run's steady-state time over its time with the longest
    outputs' drain (longest first)."""
    rate = op.batch / op.step_s  # a decode replica's tokens/s at full batch
    system_qps = op.replicas * op.tokens_per_s / wl.osl_mean
    # Samples per decode replica (pools: fewer decode replicas than replicas).
    n = offline_samples(wl, system_qps) / op.replicas * rate / op.tokens_per_s
    tokens = n * wl.osl_mean
    start = np.minimum(tokens / op.batch, float(wl.osl_max))  # full-batch steps
    span = wl.osl_max - start
    frac = (np.arange(_DRAIN_POINTS) + 0.5) / _DRAIN_POINTS
    pos = start[:, None] + span[:, None] * frac  # output position in the drain
    dist = lengths(wl)
    active = np.clip(
        n[:, None] * np.interp(pos, dist.u, dist.survival), 1.0, op.batch[:, None]
    )
    drain_s = op.decode_steps(active, wl.isl_mean + pos).mean(axis=-1) * span
    drain_tokens = active.mean(axis=-1) * span
    full_s = np.maximum(tokens - drain_tokens, 0.0) / rate
    out: FloatArray = (tokens / (full_s + drain_s)) / rate
    return np.minimum(out, 1.0)


def _server_share(op: Operating, wl: Workload, scenario: str) -> FloatArray:
    """Server/Interactive: E[T / (T + L)] over the last query's length ``L`` tokens,
    decoded as the batch drains after the schedule's ``T`` seconds."""
    dist = lengths(wl)
    points = np.linspace(0.0, float(wl.osl_max), _DRAIN_POINTS + 1)
    active = np.maximum(
        1.0, op.batch[:, None] * np.interp(points, dist.u, dist.residual)
    )
    per_token = op.decode_steps(
        active, wl.resident_context, wl.spec_draft(scenario)
    ) / wl.spec_tokens(scenario)
    cum = np.concatenate(
        [
            np.zeros((len(op.batch), 1)),
            np.cumsum(
                (per_token[:, 1:] + per_token[:, :-1]) / 2.0 * np.diff(points), -1
            ),
        ],
        axis=-1,
    )
    # Seconds to decode each of the last query's quantile lengths (linear in the grid).
    idx = np.clip(np.searchsorted(points, dist.last) - 1, 0, _DRAIN_POINTS - 1)
    w = (dist.last - points[idx]) / (points[idx + 1] - points[idx])
    tail_s = cum[:, idx] * (1.0 - w) + cum[:, idx + 1] * w
    span = server_span_s(wl, op.replicas * op.tokens_per_s / wl.osl_mean)[:, None]
    out: FloatArray = np.mean(span / (span + tail_s), axis=-1)
    return out


def simulated_offline_share(op: Operating, wl: Workload) -> float:
    """The Offline share ``reported`` approximates, scheduled sequence by sequence:
    a replica's samples (equal-probability quantiles of the capped lengths),
    longest first into ``op.batch`` slots, one token per step; full steps take the
    operating step, the others the step of the sequences left at their position."""
    n = int(offline_samples(wl, op.tokens_per_s / wl.osl_mean)[0]) // op.replicas
    s2 = math.log1p(wl.osl_cv**2)
    dist = NormalDist(math.log(wl.osl_mean) - s2 / 2.0, math.sqrt(s2))
    quantiles = [dist.inv_cdf((i + 0.5) / n) for i in range(n)]
    outs = np.minimum(np.round(np.exp(quantiles)), wl.osl_max).astype(np.int64)
    outs = np.sort(outs)[::-1]
    free = [0] * int(op.batch[0])
    ends = np.zeros(n, dtype=np.int64)
    for i, length in enumerate(outs.tolist()):
        ends[i] = heapq.heappop(free) + length
        heapq.heappush(free, int(ends[i]))
    change = np.zeros(int(ends.max()) + 1, dtype=np.int64)
    np.add.at(change, ends - outs, 1)
    np.add.at(change, ends, -1)
    active = np.cumsum(change)[:-1].astype(float)
    full = active >= op.batch[0]
    pos = np.arange(len(active), dtype=float)
    drain = op.decode_steps(active[None, ~full], wl.isl_mean + pos[None, ~full])[0]
    total = full.sum() * op.step_s[0] + drain.sum()
    return float(outs.sum() / (op.batch[0] / op.step_s[0]) / total)
