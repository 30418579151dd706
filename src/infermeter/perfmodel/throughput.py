"""Steady-state Offline, Server and Interactive throughput of a system from the roofline.

A replica at batch ``B`` admits ``B / OSL`` new sequences per step, so each step
carries ``B`` decode tokens plus ``B * ISL / OSL`` prefill tokens (chunked
prefill, spec section 3.1 "throughput regime"); a running sequence holds the
resident context ``ISL + E[OSL^2] / (2 E[OSL])`` of KV cache. Offline runs at
the largest batch the KV cache holds; Server and Interactive at the largest
batch whose step, per emitted token, stays under the scenario's TPOT bound with
headroom for the p99 (the tighter Interactive bound limits the batch: it is
never the Offline answer; aggregated serving also carries the spread of the
prefill that lands in a query's steps, which pools' decode steps do not), and
with prompts arriving no faster than the TTFT bound lets a replica prefill them
(a queue of prompts: long prompts, as in Llama 3.1 405B, make it the binding
bound). The replica shape (accelerators per replica, tensor
or expert parallel) is the one that maximises throughput: submitters tune it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infermeter.errors import ConfigError
from infermeter.perfmodel.arrivals import PROMPT_SCV, output_z
from infermeter.perfmodel.finite_run import Operating, reported
from infermeter.perfmodel.roofline import (
    Deployment,
    Efficiency,
    FloatArray,
    step_time_s,
)
from infermeter.perfmodel.specs import Accelerator, ModelArch, Workload

# Mean step vs the p99 TPOT bound: the p99 query's time per token over the mean
# step, beyond the prefill spread (``tpot_spread``). Set by the fit's own loss
# over the published rows once Interactive carries no fitted level of its own
# (docs/notes/perfmodel-validation.md, "Interactive: the physics carries it").
TPOT_HEADROOM = 0.7
PREFILL_CHUNK = 8192  # tokens a prefill-only replica runs per step
MAX_BATCH_PER_ACCELERATOR = 2048
_BATCH_POINTS = 40
# The ladder's batches are b_max^(1/39) apart (19 % at a cap of 1,000), so a TPOT
# bound met between two of them would quantise bound-limited throughput into
# steps (a staircase in plans, a rugged loss over the constants). _REFINE batches
# between the last one under the bound and the next let the bound set the batch
# continuously.
_REFINE = 16
_PENALTY = 3.0  # how fast an infeasible (too slow) configuration loses throughput
# The p99 TTFT bound limits how busy a replica's prefill may be. Prompts queue
# (M/G/1, each served in ``s``, the mean prompt's prefill time on the replica);
# TTFT99 = s * (TTFT_P99_PROMPT + TTFT_QUEUE * rho / (1 - rho)): a long prompt's
# own prefill plus the mean Pollaczek-Khinchine wait of prompts with the
# simulator's length spread. TTFT_P99_PROMPT is where the fit's own loss over the
# published rows is least (docs/notes/perfmodel-validation.md, "TTFT bound"); the p99 of the wait
# (about ln(100) times its mean, latency.py's tail for the planner) fits the
# published rows worse: chunked-prefill schedulers beat first-come-first-served.
TTFT_P99_PROMPT = 2.5
TTFT_QUEUE = (1.0 + PROMPT_SCV) / 2.0
_RHO_FLOOR = 1e-3  # prefill load where the p99 prompt alone misses the bound
# Aggregated serving: prompts arriving while a query decodes land in its steps, a
# Poisson number, each ``s`` of prefill, so its time per token spreads by
# z * s * sqrt(B (1 + cv^2)) / OSL at the p99 over queries (latency.py's TPOT
# tail, derived there and checked against the simulator). The published rows
# hold under half that tail (schedulers cap each step's prefill chunk, evening
# it out): TPOT_SPREAD scales it, chosen with RIDGE_P and TPOT_HEADROOM by the
# fit's loss (docs/notes/perfmodel-validation.md, "Continuous batch under the TPOT bound").
# Prefill/decode pools' decode steps carry no prefill.
TPOT_SPREAD = 0.3

Mask = npt.NDArray[np.bool_]
Evaluate = Callable[[FloatArray], tuple[FloatArray, FloatArray, Mask]]


def prefill_load_limit(service_s: FloatArray, ttft_s: float) -> FloatArray:
    """Largest share of a replica's time spent prefilling (prompts/s times ``service_s``)
    at which the p99 TTFT stays under ``ttft_s``; where a p99 prompt alone takes
    longer, a small share falling steeply with the overshoot (keeps the grid
    monotone in speed for the fit)."""
    slack = (ttft_s / service_s - TTFT_P99_PROMPT) / TTFT_QUEUE
    meets = np.maximum(slack, 0.0) / (1.0 + np.maximum(slack, 0.0))
    late = np.minimum(1.0, ttft_s / (TTFT_P99_PROMPT * service_s)) ** _PENALTY
    out: FloatArray = np.maximum(meets, _RHO_FLOOR * late)
    return out


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """A whole system: ``count`` accelerators of one kind serving one model."""

    accelerator: Accelerator
    count: int
    model: ModelArch
    precision: str


@dataclass(frozen=True, slots=True)
class Choice:
    """The best replica shape and its operating point (predicted, derived)."""

    tp: int
    ep: bool
    batch: int
    step_s: float
    tokens_per_s: float
    feasible: bool


def tp_options(count: int) -> list[int]:
    """Replica sizes that divide ``count``: powers of two and the whole system."""
    sizes = {t for t in (1, 2, 4, 8, 16, 32, 64) if t <= count and count % t == 0}
    return sorted(sizes | {count})


# PCIe cards of one node can run tensor parallel over PCIe (TensorRT-LLM and vLLM
# do): up to this many, all-reducing over the part's PCIe link.
PCIE_TP = 8


def deployments(system: SystemSpec, *, pcie_tp: bool = False) -> list[Deployment]:
    """Every replica shape to try: each size, tensor or expert parallel for MoE;
    with ``pcie_tp``, on PCIe cards also tensor parallel over PCIe within a node
    (besides pipeline stages). The planner tries it: without it 8 RTX PRO 6000
    cannot serve Llama 2 70B at 40 ms a token, where the published rows run about
    6,200 tokens/s. The published-row physics does not: there it moved the fit's
    shared vLLM effects through the L40S rows, and v5.1 from v4.1 read 13.9 % /
    40.3 % against 11.7 % / 29.0 % (docs/notes/perfmodel-validation.md)."""
    acc = system.accelerator
    domains = [min(acc.scaleup_domain, system.count)]
    out = []
    for tp in tp_options(system.count):
        modes = [False, True] if system.model.is_moe and tp > 1 else [False]
        pcie = pcie_tp and acc.pcie_only and 1 < tp <= PCIE_TP
        over_pcie = [tp] if pcie else []
        for ep in modes:
            for domain in [*domains, *over_pcie]:
                out.append(
                    Deployment(
                        acc,
                        system.model,
                        system.precision,
                        tp,
                        ep=ep,
                        domain=domain,
                        max_batch=MAX_BATCH_PER_ACCELERATOR * tp,
                    )
                )
    return out


def max_batch(dep: Deployment, wl: Workload) -> int:
    """Largest batch the KV cache holds at the workload's resident context."""
    per_seq = dep.kv_bytes_per_token * dep.kv_copies * wl.resident_context * wl.beams
    return int(min(dep.max_batch, max(0.0, dep.free_bytes) // per_seq))


def _batches(b_max: int) -> FloatArray:
    pts = np.unique(np.geomspace(1, b_max, _BATCH_POINTS).round())
    return pts.astype(float)


def _step(
    dep: Deployment,
    eff: Efficiency,
    wl: Workload,
    b: FloatArray,
    speed: FloatArray,
    processed: float,
) -> FloatArray:
    ctx = np.full_like(b, wl.resident_context)
    return step_time_s(
        dep,
        eff,
        decode=b * processed * wl.beams,
        sequences=b * wl.beams,
        context=ctx,
        prefill=b * wl.isl_mean / wl.osl_mean,
        prefill_context=np.full_like(b, wl.isl_mean / 2.0),
        compute_eff=eff.compute * speed,
        memory_eff=eff.memory * speed,
    )


def _bounded(
    thr: FloatArray,
    step: FloatArray,
    wl: Workload,
    scenario: str,
    emitted: float,
    spread: FloatArray | float = 0.0,
) -> tuple[FloatArray, Mask]:
    """Throughput where the step per token, plus the ``spread`` of prefill landing
    in a query's steps, meets the TPOT bound; a steep penalty elsewhere (keeps
    the grid monotone in speed for the fit). Also which batches meet it."""
    limits = wl.limits(scenario)
    if limits is None:
        return thr, np.ones(thr.shape, dtype=bool)
    bound = limits[1] / 1e3 * TPOT_HEADROOM
    per_token = step / emitted + spread
    ok = per_token <= bound
    late = np.maximum(per_token / bound, 1.0)
    out: FloatArray = np.where(ok, thr, thr / late**_PENALTY / 1e3)
    return out, ok


def _between(b: FloatArray, ok: Mask) -> FloatArray:
    """Per speed, ``_REFINE`` batches geometrically between the ladder's last batch
    meeting the TPOT bound and the next one (the first two when none meets it)."""
    last = b.size - 1 - np.argmax(ok[..., ::-1], axis=-1)
    lo = np.where(ok.any(axis=-1), last, 0)
    hi = np.minimum(lo + 1, b.size - 1)
    frac = np.arange(1, _REFINE + 1) / (_REFINE + 1)
    out: FloatArray = b[lo][..., None] * (b[hi] / b[lo])[..., None] ** frac
    return out


def _refined(
    evaluate: Evaluate, b: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``evaluate`` (throughput, step, bound met) over the ladder and, where a TPOT
    bound cuts it, over the batches between; with the batch of every point."""
    thr, step, ok = evaluate(b)
    ladder = np.broadcast_to(b, thr.shape)
    if ok.all():
        return thr, ladder, step
    fine = _between(b, ok)
    thr2, step2, _ = evaluate(fine)
    return (
        np.concatenate([thr, thr2], axis=-1),
        np.concatenate([ladder, fine], axis=-1),
        np.concatenate([step, step2], axis=-1),
    )


def tpot_spread(
    wl: Workload, scenario: str, b: FloatArray, service_s: FloatArray
) -> FloatArray:
    """How far the p99 query's time per token sits above the mean step when
    prompts of ``service_s`` prefill each land in the steps of a batch of ``b``
    (aggregated serving; ``TPOT_SPREAD`` of the Poisson tail)."""
    prompts_per_step = b * wl.spec_tokens(scenario) / wl.osl_mean
    out: FloatArray = TPOT_SPREAD * prefill_tpot_tail(wl, prompts_per_step, service_s)
    return out


def prefill_tpot_tail(
    wl: Workload, prompts_per_step: FloatArray, prefill_s: FloatArray
) -> FloatArray:
    """The p99 query's time per token above the mean step: a Poisson number of
    prompts, each ``prefill_s`` of prefill, lands in its steps (latency.py's
    module doc derives it; the simulator checks it there)."""
    spread = prefill_s * np.sqrt(prompts_per_step * (1.0 + PROMPT_SCV))
    out: FloatArray = output_z(wl.osl_cv) * spread / np.sqrt(wl.osl_mean)
    return out


def _pick(
    thr: FloatArray, b: FloatArray, step: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per speed, the best throughput with its batch and step (``b`` and ``step``
    shaped as ``thr``: ``_refined`` gives every point its batch)."""
    k = np.argmax(thr, axis=-1)[..., None]
    best = np.take_along_axis(thr, k, axis=-1)[..., 0]
    batch = np.take_along_axis(b, k, axis=-1)[..., 0]
    return best, batch, np.take_along_axis(step, k, axis=-1)[..., 0]


def prefill_rate(
    dep: Deployment, eff: Efficiency, wl: Workload, speed: FloatArray
) -> FloatArray:
    """Prompt tokens/s of a prefill-only replica, KV handed over the scale-up link."""
    chunk = np.full_like(speed, float(PREFILL_CHUNK))
    step = step_time_s(
        dep,
        eff,
        decode=np.zeros_like(speed),
        context=np.zeros_like(speed),
        prefill=chunk,
        prefill_context=np.full_like(speed, wl.isl_mean / 2.0),
        compute_eff=eff.compute * speed,
        memory_eff=eff.memory * speed,
    )
    handoff = dep.kv_bytes_per_token / dep.accelerator.link_bytes_s
    out: FloatArray = 1.0 / (step / chunk + handoff)
    return out


def _replica_grid(
    dep: Deployment,
    wl: Workload,
    scenario: str,
    eff: Efficiency,
    speed: FloatArray,
    *,
    disaggregated: bool = False,
    replicas: int = 0,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per speed: best throughput of one replica, its batch and its step time.

    ``disaggregated``: replicas split into prefill-only and decode-only pools in
    the ratio that balances them (with ``replicas`` >= 2, the best split into
    whole replicas of that many); the result is output tokens/s per replica of
    the whole system (prefill replicas included) and the decode step.
    """
    b_max = max_batch(dep, wl)
    shape = speed.shape
    if b_max < 1:
        zero = np.zeros(shape)
        return zero, zero, zero
    emitted = wl.spec_tokens(scenario)
    processed = 1.0 + wl.spec_draft(scenario)
    b = _batches(b_max)
    limits = wl.limits(scenario)
    prefill = prefill_rate(dep, eff, wl, speed)  # prompt tokens/s
    service = wl.isl_mean / prefill  # one mean prompt, s
    if limits is not None:  # prompts/s a replica may prefill under the TTFT bound
        prefill = prefill * prefill_load_limit(service, limits[0] / 1e3)
    if not disaggregated:

        def aggregated(bs: FloatArray) -> tuple[FloatArray, FloatArray, Mask]:
            step = _step(dep, eff, wl, bs, speed[..., None], processed)
            spread = tpot_spread(wl, scenario, bs, service[..., None])
            thr, ok = _bounded(bs * emitted / step, step, wl, scenario, emitted, spread)
            if limits is not None:
                thr = np.minimum(thr, (prefill * wl.osl_mean / wl.isl_mean)[..., None])
            return thr, step, ok

        return _pick(*_refined(aggregated, b))

    def decode_only(bs: FloatArray) -> tuple[FloatArray, FloatArray, Mask]:
        step = step_time_s(
            dep,
            eff,
            decode=bs * processed * wl.beams,
            sequences=bs * wl.beams,
            context=np.full_like(bs, wl.resident_context),
            prefill=np.zeros_like(bs),
            prefill_context=np.zeros_like(bs),
            compute_eff=eff.compute * speed[..., None],
            memory_eff=eff.memory * speed[..., None],
        )
        thr, ok = _bounded(bs * emitted / step, step, wl, scenario, emitted)
        return thr, step, ok

    decode, bs, step = _refined(decode_only, b)
    pool = prefill[..., None]
    if replicas >= 2:
        return _pick(_whole_split(decode, pool, wl, replicas), bs, step)
    # Balance: decode replicas' requests/s = prefill replicas' prompts/s.
    demand = decode * wl.isl_mean / wl.osl_mean
    return _pick(decode * pool / (pool + demand), bs, step)


def _whole_split(
    decode: FloatArray, prefill: FloatArray, wl: Workload, replicas: int
) -> FloatArray:
    """Output tokens/s per replica of the best split of ``replicas`` into ``p``
    prefill and ``replicas - p`` decode replicas: the pools run at the slower
    of the two (a board of two replicas can only split 1:1)."""
    p = np.arange(1, replicas, dtype=float)
    feeds = p * (prefill * wl.osl_mean / wl.isl_mean)[..., None]
    serves = (replicas - p) * decode[..., None]
    out: FloatArray = np.max(np.minimum(feeds, serves), axis=-1) / replicas
    return out


def throughput_grid(
    system: SystemSpec,
    wl: Workload,
    scenario: str,
    eff: Efficiency,
    speed: FloatArray,
    *,
    disaggregated: bool = False,
) -> FloatArray:
    """System output tokens/s as a finite MLPerf run reports it (``finite_run``;
    before the Server derate) at every ``speed`` factor.

    ``speed`` multiplies the compute and memory efficiency of ``eff``;
    ``disaggregated`` also tries prefill/decode pools of whole replicas (submitters
    do: NVIDIA credits them with nearly 1.5x per GPU in its v5.1 results). Raises
    ConfigError when no replica shape fits the model.
    """
    best = np.zeros(speed.shape)
    for dep in deployments(system):
        replicas = system.count // dep.tp
        splits = (False, True) if disaggregated and replicas >= 2 else (False,)
        for split in splits:
            thr, b, step = _replica_grid(
                dep, wl, scenario, eff, speed, disaggregated=split, replicas=replicas
            )
            op = Operating(dep, eff, speed, thr, b, step, replicas)
            best = np.maximum(best, replicas * reported(op, wl, scenario))
    if not np.any(best > 0):
        raise ConfigError(
            f"{system.model.name} at {system.precision.upper()} does not fit on "
            f"{system.count} x {system.accelerator.name} at any replica size."
        )
    return best


def operating_point(
    system: SystemSpec, wl: Workload, scenario: str, eff: Efficiency
) -> Operating:
    """The aggregated replica shape with the most steady-state tokens/s at speed 1,
    as ``finite_run`` sees it (its checks and benchmark start here)."""
    one = np.asarray([1.0])
    points = []
    for dep in deployments(system):
        thr, b, step = _replica_grid(dep, wl, scenario, eff, one)
        points.append(Operating(dep, eff, one, thr, b, step, system.count // dep.tp))
    return max(points, key=lambda op: op.replicas * float(op.tokens_per_s[0]))


def meets_bounds(
    dep: Deployment,
    eff: Efficiency,
    wl: Workload,
    scenario: str,
    step_s: float,
    *,
    ttft: bool = True,
) -> bool:
    """Whether a replica stepping every ``step_s`` meets ``scenario``'s TPOT bound (with
    headroom for the p99) and (``ttft``) a p99 prompt's prefill alone its TTFT bound."""
    limits = wl.limits(scenario)
    if limits is None:
        return True
    if step_s / wl.spec_tokens(scenario) > limits[1] / 1e3 * TPOT_HEADROOM:
        return False
    if not ttft:
        return True
    service = wl.isl_mean / float(prefill_rate(dep, eff, wl, np.asarray([1.0]))[0])
    return TTFT_P99_PROMPT * service <= limits[0] / 1e3  # a p99 prompt alone fits


def best_config(
    system: SystemSpec, wl: Workload, scenario: str, eff: Efficiency
) -> Choice:
    """The replica shape with the highest throughput under ``scenario``."""
    one = np.asarray([1.0])
    found: Choice | None = None
    for dep in deployments(system):
        thr, b, step = _replica_grid(dep, wl, scenario, eff, one)
        total = (system.count // dep.tp) * float(thr[0])
        if total > 0 and (found is None or total > found.tokens_per_s):
            ok = meets_bounds(dep, eff, wl, scenario, float(step[0]))
            found = Choice(dep.tp, dep.ep, int(b[0]), float(step[0]), total, ok)
    if found is None:
        raise ConfigError(
            f"{system.model.name} at {system.precision.upper()} does not fit on "
            f"{system.count} x {system.accelerator.name} at any replica size."
        )
    return found


def steady_state(
    dep: Deployment, eff: Efficiency, wl: Workload, scenario: str
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Batch grid of one replica with its mean step and output tokens/s (no bound)."""
    b_max = max_batch(dep, wl)
    if b_max < 1:
        zero = np.zeros(0)
        return zero, zero, zero
    b = _batches(b_max)
    step = _step(dep, eff, wl, b, np.asarray(1.0), 1.0 + wl.spec_draft(scenario))
    return b, step, b * wl.spec_tokens(scenario) / step


def replica_throughput(
    dep: Deployment,
    wl: Workload,
    scenario: str,
    eff: Efficiency,
    *,
    disaggregated: bool = False,
) -> tuple[float, int, float, bool]:
    """One replica's tokens/s (before the derate), batch, step time and whether the
    scenario's TPOT bound is met (disaggregated: per replica of both pools; the
    planner checks the TTFT itself, against its user's prompt)."""
    thr, b, step = _replica_grid(
        dep, wl, scenario, eff, np.asarray([1.0]), disaggregated=disaggregated
    )
    ok = float(thr[0]) > 0 and meets_bounds(
        dep, eff, wl, scenario, float(step[0]), ttft=False
    )
    return float(thr[0]), int(b[0]), float(step[0]), ok


def predict(system: SystemSpec, wl: Workload, scenario: str, eff: Efficiency) -> float:
    """Predicted system output tokens/s under ``scenario`` (Offline, Server,
    Interactive): the published-row physics (aggregated or disaggregated)."""
    grid = throughput_grid(
        system, wl, scenario, eff, np.asarray([1.0]), disaggregated=True
    )
    derate = eff.server if scenario != "Offline" else 1.0
    return float(grid[0]) * derate
