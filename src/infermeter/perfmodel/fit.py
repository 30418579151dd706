"""Fit a few calibrated effects to published rows: a regularised log model.

Each row's throughput is the physics (``throughput.throughput_grid``) evaluated
at a speed factor ``k`` (a common multiplier of compute and memory efficiency),
times a scenario derate:

    log thr = log physics_row(k) + d,   log k = sum of speed effects,
                                         d     = sum of scenario effects.

Speed effects are shared by many rows (the stack, the chip generation, the
part, the precision, the benchmark, mixture-of-experts); scenario effects
derate Server and Interactive below their TPOT-bound steady state (and set a
benchmark's first-round software level, per scenario). Every effect
has a prior (mean 0, a standard deviation per kind): a part, stack or benchmark
without rows falls back to its parents, never to a per-row constant. The fit
is Levenberg-Marquardt on the log error (Huber loss) with the physics
precomputed on a grid of ``k``, so a refit (for leave-one-out) is cheap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from infermeter.errors import ConfigError
from infermeter.perfmodel.published import PublishedRow, round_ordinal
from infermeter.perfmodel.roofline import Efficiency, FloatArray
from infermeter.perfmodel.specs import (
    get_accelerator,
    get_model,
    get_workload,
    runs_at,
)
from infermeter.perfmodel.throughput import SystemSpec, throughput_grid

LOG_SPEED = np.linspace(math.log(0.01), math.log(8.0), 81)
NOISE_SD = 0.1  # residual log error the priors are weighed against
# Prior standard deviation of each kind of effect (log scale).
PRIOR_SD = {
    "global": 10.0,
    "stack": 0.5,
    "family": 0.5,
    "arch": 0.3,
    "part": 0.15,
    "prec": 0.3,
    "group": 0.15,
    "bench": 0.3,
    "moe": 0.5,
    "age": 0.3,
    "first": 0.3,
    "power": 0.15,
    "preview": 0.2,
    "scen": 0.3,
    "scenstack": 0.2,
    "scenbench": 0.2,
}
# Stacks built on another inherit its effects (LLMBoost runs vLLM underneath).
STACK_FAMILY = {"llmboost": "vllm", "vllm": "vllm", "sglang": "vllm"}
BASE = Efficiency()
# A row a year (two rounds) older than the newest round read counts this much in
# the fit: software moves, and a plan is for today's. The validations hardly
# choose it (v6.1 from v4.1 + v5.1: 15.6 %, 16.1 %, 16.1 % median at 1, 0.5,
# 0.25; benchmarks/perfmodel/anchor_variants.py).
RECENCY = 0.5
# Published systems this size or smaller are read as aggregated serving: no closed
# v5.1 system of one board names disaggregated serving, and with pools the physics
# put their Interactive rows 1.25-1.36x above aggregated, a gap only a fitted
# Interactive level had hidden (docs/notes/perfmodel-validation.md, "Interactive: the physics
# carries it"). NVIDIA ran its GB200 NVL72 rack's 405B Interactive row with pools.
ONE_BOARD = 8


@dataclass(frozen=True, slots=True)
class Prepared:
    """A row with its physics on the speed grid and its effect names."""

    row: PublishedRow
    log_obs: float
    log_grid: FloatArray
    speed: tuple[str, ...]
    scenario: tuple[str, ...]


def precision_for(part: str, precision: str) -> str:
    """The precision whose fitted effects set a row's speed: ``precision`` where the
    part computes it, else its lowest native one (what weight-only FP4 multiplies
    nearest to)."""
    acc = get_accelerator(part)
    return precision if acc.supports(precision) else acc.lowest_precision()


def weights_for(part: str, precision: str, benchmark: str) -> str:
    """The precision a row's physics holds its weights in: ``precision`` where the
    part runs the benchmark's model at it (``runs_at``: FP4 experts of an FP4
    checkpoint too), else the part's lowest native one."""
    acc = get_accelerator(part)
    if runs_at(acc, get_model(benchmark), precision):
        return precision
    return acc.lowest_precision()


def benchmark_age(benchmark: str, round_: str) -> int:
    """Rounds a benchmark has been in MLPerf by ``round_`` (0 = new), capped at 2."""
    wl = get_workload(benchmark)
    if not wl.introduced or not round_:
        return 2
    return max(0, min(2, round_ordinal(round_) - round_ordinal(wl.introduced)))


def speed_features(
    part: str,
    stack: str,
    precision: str,
    benchmark: str,
    *,
    round_: str = "",
    power: str = "",
    preview: bool = False,
) -> tuple[str, ...]:
    """Effects that set a system's speed factor (first part of a mixed system)."""
    acc = get_accelerator(part)
    arch = get_model(benchmark)
    stack = effect_stack(part, stack)
    family = STACK_FAMILY.get(stack)
    out = [
        "global",
        f"arch:{acc.arch or acc.key}",
        f"part:{acc.key}",
        f"prec:{precision}",
        f"group:{acc.key}|{stack}|{precision}",
        f"bench:{get_workload(benchmark).key}",
    ]
    # A family's own rows carry its effect once (vLLM: family:vllm, not also
    # stack:vllm, which would double its prior); what LLMBoost and SGLang inherit
    # is learned from them.
    out.append(f"family:{family}" if family else f"stack:{stack}")
    if family and family != stack:
        out.append(f"stack:{stack}")
    if arch.is_moe:
        out.append("moe:moe")
    # A benchmark's first round carries no age effect: its software level is the
    # scenario's first-round derate (``scenario_features``), one per scenario,
    # since first rounds lagged in Server more than Offline (DeepSeek-R1 and
    # Llama 3.1 8B moved 1.5-1.7x Offline and 1.9-2.8x Server a round later).
    # Shared by every benchmark, it is learned where a benchmark shows its first
    # round and a later one (Mixtral v4.1 -> v5.1) and divided out of a
    # first-round anchor predicting a later round; it beat the ``age:0`` speed
    # effect it replaced on both splits (v5.1 from v4.1: 11.0 % / 28.8 % against
    # 11.7 % / 29.0 %; v6.1 from v4.1 + v5.1: 16.1 % / 38.2 % against 17.1 % /
    # 40.3 %; benchmarks/perfmodel/anchor_variants.py).
    age = benchmark_age(benchmark, round_)
    if age:
        out.append(f"age:{age}")
    if power:
        out.append(f"power:{power}")
    if preview:  # pre-release hardware or software
        out.append("preview:preview")
    return tuple(out)


# A software string that names no serving stack ("ROCm", "CUDA 12.2"): "other".
VAGUE = "other"


def effect_stack(part: str, stack: str) -> str:
    """The stack name a row's effects carry: a stack on a CPU is its own
    ("pytorch@cpu"), so what CPU rows teach (their Server derate: slow prefill
    under the TTFT bound) never passes to a GPU running the same framework; a
    vague one ("other") is its part's own ("other@mi355x"): v4.1's one 4x L40S
    "CUDA 12.2" system taught "other" +0.44, which landed on every row of
    another part with a vague string (MangoBoost's v6.1 "ROCm" rows)."""
    acc = get_accelerator(part)
    if stack == VAGUE:
        return f"{stack}@{acc.key}"
    return f"{stack}@cpu" if acc.kind == "cpu" else stack


def scenario_features(
    scenario: str, stack: str, benchmark: str, part: str, round_: str = ""
) -> tuple[str, ...]:
    """Effects that derate a Server or Interactive row below its steady state
    (``part``: the first part of the system, for ``effect_stack``; ``round_``: the
    row's round, default mature software as ``benchmark_age`` reads it), and, in a
    benchmark's first round, that round's software level (``first:Offline``, or
    ``first:Server`` for Server and Interactive)."""
    first = benchmark_age(benchmark, round_) == 0
    if scenario == "Offline":
        return ("first:Offline",) if first else ()
    stack = effect_stack(part, stack)
    # Interactive is a Server run with tighter bounds: it takes Server's derate (the
    # stack's and the benchmark's with it) and nothing of its own. What sets it
    # apart is the physics (the TPOT bound limits the batch, the TTFT bound the
    # prefill load): an Interactive level fitted to one round's rows (a stack's,
    # the benchmark's, the scenario's) cannot reach a round or a benchmark without
    # such rows, and held out it moved systems the wrong way (docs/notes/perfmodel-validation.md,
    # "Interactive: the physics carries it").
    out = ["scen:Server", f"scenstack:Server|{stack}"]
    family = STACK_FAMILY.get(stack)
    if family and family != stack:
        out.append(f"scenstack:Server|{family}")
    # A benchmark's own Server level in its first round is that round's software
    # (its first Server harness), kept apart from the level later rounds show:
    # DeepSeek-R1's v5.1 Server rows ran at 0.45-0.58 of Offline, and six months
    # later the same GB300 NVL72 rack ran Server at 2.77x its v5.1 rate per GPU
    # with software alone (docs/notes/perfmodel-validation.md, "First-round Server levels"). A plan
    # (mature software) or a later round reads the later level, or none.
    key = f"scenbench:Server|{get_workload(benchmark).key}"
    out.append(key + ("|first" if first else ""))
    if first:
        out.append("first:Server")
    return tuple(out)


def physics_grid(
    row: PublishedRow, speed: FloatArray | None = None, *, disaggregated: bool = True
) -> FloatArray:
    """Row throughput (tokens/s, before the scenario derate) on the speed grid
    (or at ``speed``).

    On a system of more than one board, the better of aggregated serving and
    prefill/decode pools of whole replicas (submitters tune; ``disaggregated=False``:
    aggregated alone); a board of ``ONE_BOARD`` or fewer accelerators serves
    aggregated. A mixed system serves data-parallel: its parts' throughputs add.
    """
    speed = np.exp(LOG_SPEED) if speed is None else speed
    total = np.zeros_like(speed)
    arch = get_model(row.benchmark)
    wl = get_workload(row.benchmark)
    pools = disaggregated and row.count > ONE_BOARD
    for part, count in row.parts or ((row.accelerator, row.count),):
        acc = get_accelerator(part)
        prec = weights_for(part, row.precision, row.benchmark)
        spec = SystemSpec(acc, count, arch, prec)
        total = total + throughput_grid(
            spec, wl, row.scenario, BASE, speed, disaggregated=pools
        )
    return total


def prepare(
    rows: Iterable[PublishedRow],
) -> tuple[list[Prepared], list[tuple[PublishedRow, str]]]:
    """Rows with their grids, and the rows the physics cannot place with the reason."""
    out, failed = [], []
    for row in rows:
        log_grid = log_physics(row)
        if isinstance(log_grid, str):
            failed.append((row, log_grid))
            continue
        part = row.parts[0][0] if row.parts else row.accelerator
        out.append(
            Prepared(
                row,
                math.log(row.tokens_per_s),
                log_grid,
                speed_features(
                    part,
                    row.stack,
                    precision_for(part, row.precision),
                    row.benchmark,
                    round_=row.round,
                    power=row.power,
                    preview=row.preview,
                ),
                scenario_features(
                    row.scenario, row.stack, row.benchmark, part, row.round
                ),
            )
        )
    return out, failed


# A row's physics is a pure function of the row and the model's constants: a refit,
# its held-out folds, a prediction's anchors and a plan read the same rows of a
# round, and placing each on the speed grid is most of their cost (<1 KB a row
# kept). A script that changes the physics' constants between fits calls
# ``log_physics.cache_clear()``.
@lru_cache(maxsize=8192)
def log_physics(row: PublishedRow) -> FloatArray | str:
    """Log of ``physics_grid(row)`` (read-only), or why the physics cannot place it."""
    try:
        grid = physics_grid(row)
    except ConfigError as exc:
        return str(exc)
    with np.errstate(divide="ignore"):
        log_grid = np.log(np.maximum(grid, 1e-30))
    log_grid.flags.writeable = False  # one array shared by every caller
    return log_grid


@dataclass(frozen=True, slots=True)
class Coefficients:
    """Fitted effects by name (log scale) and what they were fitted on; ``support``
    counts, per effect, the published systems whose rows carry it (how much
    evidence an effect a plan inherits rests on; empty for older files)."""

    values: dict[str, float]
    rows: int
    rounds: tuple[str, ...]
    label: str
    support: dict[str, int] = field(default_factory=dict)

    def log_speed(self, names: Sequence[str]) -> float:
        return sum(self.values.get(n, 0.0) for n in names)

    def log_derate(self, names: Sequence[str]) -> float:
        return sum(self.values.get(n, 0.0) for n in names)


def _interp(grids: FloatArray, u: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Log throughput of each row (grid row) at its log speed ``u``, and the slope.

    Linear in log-log between grid points, extrapolated past the ends.
    """
    x = LOG_SPEED
    i = np.clip(np.searchsorted(x, u) - 1, 0, len(x) - 2)
    rows = np.arange(grids.shape[0])
    lo, hi = grids[rows, i], grids[rows, i + 1]
    slope = (hi - lo) / (x[i + 1] - x[i])
    return lo + slope * (u - x[i]), slope


def predict_log(p: Prepared, coef: Coefficients) -> float:
    u = np.asarray([coef.log_speed(p.speed)])
    value, _ = _interp(p.log_grid[None, :], u)
    return float(value[0]) + coef.log_derate(p.scenario)


def _prior_precision(name: str) -> float:
    kind = name.split(":", 1)[0]
    return (NOISE_SD / PRIOR_SD.get(kind, 0.3)) ** 2


@dataclass(frozen=True, slots=True)
class _Problem:
    """The design of one fit: rows x effects, grids, observations, prior."""

    names: list[str]
    xs: FloatArray  # speed effects per row
    xd: FloatArray  # scenario effects per row
    grids: FloatArray
    obs: FloatArray
    lam: FloatArray  # prior precision per effect
    weight: FloatArray  # per row: how much its round counts (``round_weights``)

    def residual(self, beta: FloatArray) -> tuple[FloatArray, FloatArray]:
        fu, slope = _interp(self.grids, self.xs @ beta)
        return self.obs - fu - self.xd @ beta, slope

    def loss(self, beta: FloatArray) -> float:
        r, _ = self.residual(beta)
        return float(np.sum(self.weight * _huber(r)) + beta @ (self.lam * beta))


# Rows further off than three noise deviations weigh linearly, not quadratically
# (Huber loss): one odd submission (a stack sample of one) cannot drag shared effects.
HUBER = 3.0 * NOISE_SD


def _huber(r: FloatArray) -> FloatArray:
    a = np.abs(r)
    out: FloatArray = np.where(a <= HUBER, r * r, 2 * HUBER * a - HUBER * HUBER)
    return out


def _huber_weight(r: FloatArray) -> FloatArray:
    out: FloatArray = np.minimum(1.0, HUBER / np.maximum(np.abs(r), 1e-12))
    return out


def _problem(train: Sequence[Prepared], recency: float = RECENCY) -> _Problem:
    names = sorted({n for p in train for n in (*p.speed, *p.scenario)})
    col = {n: i for i, n in enumerate(names)}
    xs = np.zeros((len(train), len(names)))
    xd = np.zeros_like(xs)
    for i, p in enumerate(train):
        xs[i, [col[n] for n in p.speed]] = 1.0
        xd[i, [col[n] for n in p.scenario]] = 1.0
    return _Problem(
        names,
        xs,
        xd,
        np.stack([p.log_grid for p in train]),
        np.asarray([p.log_obs for p in train]),
        np.asarray([_prior_precision(n) for n in names]),
        round_weights([p.row.round for p in train], recency),
    )


def round_weights(rounds: Sequence[str], recency: float) -> FloatArray:
    """Each row's weight in the fit: ``recency`` to the power of the years (two
    rounds) its round lies behind the newest one read (1: every round alike)."""
    newest = max((round_ordinal(r) for r in rounds), default=0)
    years = np.asarray([(newest - round_ordinal(r)) / 2 for r in rounds], dtype=float)
    out: FloatArray = np.power(recency, years)
    return out


def fit(
    train: Sequence[Prepared],
    *,
    label: str = "",
    iterations: int = 60,
    recency: float | None = None,
) -> Coefficients:
    """Fit every effect the rows name: Levenberg-Marquardt on the log error (Huber
    loss, ridge priors; iteratively reweighted), always from zero.
    """
    if len(train) < 2:
        raise ConfigError("Calibration needs at least two usable published rows.")
    prob = _problem(train, RECENCY if recency is None else recency)
    beta = np.zeros(len(prob.names))
    loss, damping = prob.loss(beta), 1e-3
    for _ in range(iterations):
        resid, slope = prob.residual(beta)
        w = _huber_weight(resid) * prob.weight
        jac = prob.xs * slope[:, None] + prob.xd
        normal = (jac * w[:, None]).T @ jac + np.diag(prob.lam)
        grad = jac.T @ (w * resid) - prob.lam * beta
        while True:
            step = np.linalg.solve(normal + damping * np.diag(np.diag(normal)), grad)
            trial = beta + step
            new = prob.loss(trial)
            if new <= loss:
                damping = max(damping / 3.0, 1e-6)
                break
            damping *= 4.0
            if damping > 1e6:
                step = np.zeros_like(beta)
                break
        beta = beta + step
        gain, loss = loss - min(loss, new), min(loss, new)
        if gain < 1e-9:
            break
    rounds = tuple(sorted({p.row.round for p in train}))
    values = {name: float(b) for name, b in zip(prob.names, beta, strict=True)}
    return Coefficients(
        values,
        len(train),
        rounds,
        label or f"fitted on {' + '.join(rounds)}",
        support(train),
    )


def support(train: Sequence[Prepared]) -> dict[str, int]:
    """Per effect, how many published systems (accelerator x count x stack) carry it;
    per benchmark and part (``pair:{benchmark}|{part}``, not an effect) how many ran
    that benchmark on that part (a plan there rests on them); and per benchmark and
    scenario (``scenario_key``) how many ran it so (its latency bounds were read)."""
    systems: dict[str, set[tuple[str, int, str]]] = {}
    for p in train:
        bench = get_workload(p.row.benchmark).key
        parts = [part for part, _ in p.row.parts] or [p.row.accelerator]
        pairs = [pair_key(bench, get_accelerator(part).key) for part in parts]
        pairs.append(scenario_key(bench, p.row.scenario))
        for name in (*p.speed, *p.scenario, *pairs):
            systems.setdefault(name, set()).add(p.row.system_key)
    return {name: len(keys) for name, keys in sorted(systems.items())}


def pair_key(benchmark: str, part: str) -> str:
    """The support entry of published systems that ran ``benchmark`` on ``part``."""
    return f"pair:{benchmark}|{part}"


def scenario_key(benchmark: str, scenario: str) -> str:
    """The support entry of published systems that ran ``benchmark`` in ``scenario``."""
    return f"rows:{benchmark}|{scenario}"


def loss_at(train: Sequence[Prepared], coef: Coefficients) -> float:
    """The penalised loss ``fit`` minimises (Huber on the log error plus the
    priors) at ``coef``: how well a model structure fits the rows, at its optimum."""
    prob = _problem(train)
    return prob.loss(np.asarray([coef.values.get(n, 0.0) for n in prob.names]))
