"""Query generation before the clock starts: loadable sets and the schedule, as LoadGen does it.

Pure functions of the effective settings and the seeds. The random streams
are consumed in LoadGen's order (``GenerateLoadableSets``, ``GenerateQueries``)
so ``loaded_qsl_set``, the sample indices and the Server arrival times are
bit-exact with the official LoadGen for the same seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infermeter.loadgen.interfaces import IndexArray, NsArray
from infermeter.loadgen.rng import MT19937Stream
from infermeter.loadgen.settings import NS_PER_MS, EffectiveSettings, Mode, Scenario


@dataclass(frozen=True, slots=True)
class LoadableSet:
    """Sample indices loaded together; MultiStream sets carry ``spq - 1`` padding."""

    indices: IndexArray
    distribution_end: int  # excludes the MultiStream padding


@dataclass(frozen=True, slots=True)
class Schedule:
    """Every query of one run phase, generated before the clock starts.

    Query ``q`` holds samples ``query_offsets[q]:query_offsets[q + 1]``; when
    ``query_offsets`` is None every query holds ``samples_per_query`` samples.
    """

    scheduled_ns: NsArray
    sample_indices: IndexArray
    samples_per_query: int
    query_offsets: IndexArray | None
    generated_duration_ns: int

    @property
    def query_count(self) -> int:
        return int(self.scheduled_ns.shape[0])

    @property
    def sample_count(self) -> int:
        return int(self.sample_indices.shape[0])

    def sample_range(self, first_query: int, end_query: int) -> tuple[int, int]:
        """Sample positions ``[begin, end)`` of queries ``[first_query, end_query)``."""
        if self.query_offsets is None:
            spq = self.samples_per_query
            return first_query * spq, end_query * spq
        return int(self.query_offsets[first_query]), int(self.query_offsets[end_query])

    def query_of_samples(self) -> IndexArray:
        """The query index of each sample."""
        if self.query_offsets is None:
            return (
                np.arange(self.sample_count, dtype=np.int64) // self.samples_per_query
            )
        sizes = np.diff(self.query_offsets)
        return np.repeat(np.arange(self.query_count, dtype=np.int64), sizes)


def generate_loadable_sets(
    settings: EffectiveSettings, qsl_total_count: int
) -> list[LoadableSet]:
    """Shuffle the sample indices with ``qsl_rng_seed`` and cut them into loadable sets."""
    accuracy = settings.mode is Mode.ACCURACY_ONLY
    count = (
        settings.accuracy_sample_count
        if accuracy
        else settings.performance_sample_count
    )
    count = min(count, qsl_total_count)
    order = np.arange(count, dtype=np.int64)
    MT19937Stream(settings.qsl_rng_seed).shuffle(order)
    set_size = max(1, settings.performance_sample_count)
    padding = (
        settings.samples_per_query - 1
        if settings.scenario is Scenario.MULTI_STREAM
        else 0
    )
    sets = []
    for begin in range(0, count, set_size):
        chunk = order[begin : begin + set_size]
        padded = np.concatenate((chunk, chunk[:padding])) if padding else chunk.copy()
        sets.append(LoadableSet(padded, int(chunk.shape[0])))
    return sets


def generate_queries(settings: EffectiveSettings, loaded: LoadableSet) -> Schedule:
    """The queries of one phase, in LoadGen's generation order."""
    plan = _Plan.build(settings, loaded)
    rng = MT19937Stream(settings.sample_index_rng_seed)
    accuracy_order = _shuffled_starts(rng, plan) if plan.accuracy else None
    unique_order = _shuffled_starts(rng, plan)
    equal_issue = _equal_issue_sequence(rng, plan)
    scheduled, duration = _timestamps(settings, plan)
    n = int(scheduled.shape[0])
    s = settings.scenario
    if s is Scenario.OFFLINE:
        positions = _offline_positions(rng, plan, settings)
    elif s is Scenario.MULTI_STREAM:
        starts = _multi_stream_starts(
            rng, plan, settings, n, accuracy_order, unique_order
        )
        positions = (starts[:, None] + np.arange(plan.spq)[None, :]).reshape(-1)
    elif settings.requested.performance_issue_unique:
        positions = unique_order[:n]
    elif settings.requested.performance_issue_same:
        positions = np.full(n, settings.requested.performance_issue_same_index)
    elif settings.requested.sample_concatenate_permutation:
        positions = equal_issue[np.arange(n) % equal_issue.shape[0]]
    elif accuracy_order is not None:
        positions = accuracy_order[:n]
    else:
        positions = _uniform(rng, plan, n)
    samples = loaded.indices[np.asarray(positions, dtype=np.int64)]
    offsets = None
    if s is Scenario.OFFLINE and plan.accuracy and plan.remainder:
        extra = loaded.indices[_remainder_positions(plan, accuracy_order)]
        samples = np.concatenate((samples, extra))
        scheduled = np.append(scheduled, duration)
        offsets = np.array([0, plan.spq, plan.spq + plan.remainder], dtype=np.int64)
    return Schedule(scheduled, samples.astype(np.int64), plan.spq, offsets, duration)


def planned_size(settings: EffectiveSettings, set_len: int) -> tuple[int, int]:
    """(queries, samples) ``generate_queries`` will make, without making them.

    Exact for fixed-period scenarios; Server's Poisson count is its expectation
    plus 1 % (what ``_poisson_times`` first allocates).
    """
    indices = np.zeros(0, dtype=np.int64)  # only the length matters to the plan
    plan = _Plan.build(settings, LoadableSet(indices, set_len), set_len=set_len)
    if settings.scenario is Scenario.SERVER:
        expected = settings.target_qps * plan.gen_duration_ns / 1e9 * 1.01
        queries = _count_from(plan, int(expected) + 1)
    else:
        period = int((1.0 / settings.target_qps) * 1e9)
        k_gen = -(-plan.gen_duration_ns // period) if period > 0 else 0
        queries = _count_from(plan, k_gen + 1)
    return queries, queries * plan.spq + plan.remainder


@dataclass(frozen=True, slots=True)
class _Plan:
    accuracy: bool
    spq: int
    set_len: int  # loaded set length, padding included
    distribution_end: int
    stride: int
    min_queries: int  # before equal-issue padding (sizes the equal-issue distribution)
    gen_duration_ns: int
    equal_issue: bool  # pad the query count to whole sets (not Offline, not accuracy)
    remainder: int

    @classmethod
    def build(
        cls,
        settings: EffectiveSettings,
        loaded: LoadableSet,
        *,
        set_len: int | None = None,
    ) -> _Plan:
        r = settings.requested
        accuracy = settings.mode is Mode.ACCURACY_ONLY
        if set_len is None:
            set_len = int(loaded.indices.shape[0])
        spq = settings.samples_per_query
        offline = settings.scenario is Scenario.OFFLINE
        if accuracy and offline:
            spq = loaded.distribution_end
        elif offline and r.sample_concatenate_permutation:
            spq += (-spq) % set_len
        multiplier = 1 if settings.scenario is Scenario.SERVER else 2
        gen_duration_ns = multiplier * settings.target_duration_ms * NS_PER_MS
        min_queries = settings.min_query_count
        if accuracy or r.performance_issue_unique:
            gen_duration_ns = 0
            min_queries = set_len // spq
        stride = spq if settings.scenario is Scenario.MULTI_STREAM else 1
        return cls(
            accuracy=accuracy,
            spq=spq,
            set_len=set_len,
            distribution_end=loaded.distribution_end,
            stride=stride,
            min_queries=min_queries,
            gen_duration_ns=gen_duration_ns,
            equal_issue=r.sample_concatenate_permutation
            and not accuracy
            and not offline,
            remainder=set_len % spq if accuracy and offline else 0,
        )


def _shuffled_starts(rng: MT19937Stream, plan: _Plan) -> IndexArray:
    starts = np.arange(0, plan.distribution_end, plan.stride, dtype=np.int64)
    rng.shuffle(starts)
    return starts


def _equal_issue_sequence(rng: MT19937Stream, plan: _Plan) -> IndexArray:
    # Built unconditionally (it advances the stream); each shuffle permutes the previous one.
    perm = np.arange(plan.set_len, dtype=np.int64)
    parts = []
    for _ in range(0, plan.min_queries, max(1, plan.set_len)):
        rng.shuffle(perm)
        parts.append(perm.copy())
    return np.concatenate(parts) if parts else perm


def _uniform(rng: MT19937Stream, plan: _Plan, n: int) -> IndexArray:
    return rng.uniform_int(plan.distribution_end - 1, n).astype(np.int64)


def _multi_stream_starts(
    rng: MT19937Stream,
    plan: _Plan,
    settings: EffectiveSettings,
    n: int,
    accuracy_order: IndexArray | None,
    unique_order: IndexArray,
) -> IndexArray:
    if settings.requested.performance_issue_unique:
        return unique_order[:n]
    if settings.requested.performance_issue_same:
        return np.full(
            n, settings.requested.performance_issue_same_index, dtype=np.int64
        )
    if accuracy_order is not None:
        return accuracy_order[:n]
    return _uniform(rng, plan, n)


def _offline_positions(
    rng: MT19937Stream, plan: _Plan, settings: EffectiveSettings
) -> IndexArray:
    spq = plan.spq
    if settings.requested.performance_issue_same:
        return np.full(
            spq, settings.requested.performance_issue_same_index, dtype=np.int64
        )
    repeats, remainder = divmod(spq, plan.set_len)
    blocks = []
    for _ in range(repeats):
        block = np.arange(plan.set_len, dtype=np.int64)
        if settings.requested.sample_concatenate_permutation:
            rng.shuffle(block)
        blocks.append(block)
    blocks.append(np.arange(remainder, dtype=np.int64))
    return np.concatenate(blocks)


def _remainder_positions(plan: _Plan, accuracy_order: IndexArray | None) -> IndexArray:
    assert accuracy_order is not None
    return accuracy_order[: plan.remainder]


def _timestamps(settings: EffectiveSettings, plan: _Plan) -> tuple[NsArray, int]:
    """Query timestamps and the generated duration (the timestamp after the last)."""
    if settings.scenario is Scenario.SERVER:
        return _poisson_times(settings, plan)
    period = int((1.0 / settings.target_qps) * 1e9)
    k_gen = -(-plan.gen_duration_ns // period) if period > 0 else 0
    n = _count_from(plan, k_gen + 1)
    times = np.arange(n + 1, dtype=np.int64) * period
    return times[:n], int(times[n])


def _poisson_times(settings: EffectiveSettings, plan: _Plan) -> tuple[NsArray, int]:
    """Arrival times in chunks, written into one growing array (bounded temporaries)."""
    rng = MT19937Stream(settings.schedule_rng_seed)
    qps = settings.target_qps
    estimate = int(qps * plan.gen_duration_ns / 1e9 * 1.01) + plan.min_queries + 1024
    times = np.empty(estimate + 1, dtype=np.int64)
    times[0] = 0
    filled = 1  # times[:filled] are known
    while True:
        if filled == times.shape[0]:
            times = np.concatenate(
                (times, np.empty(times.shape[0] // 4 + 1024, np.int64))
            )
        step = min(_GAP_CHUNK, times.shape[0] - filled)
        gaps = rng.exponential_ns(qps, step)
        np.cumsum(gaps, out=times[filled : filled + step])
        times[filled : filled + step] += times[filled - 1]
        filled += step
        known = times[:filled]
        if known[-1] >= plan.gen_duration_ns:
            n = _count(plan, known)
            if n < filled:
                return times[:n], int(times[n])


_GAP_CHUNK = 1 << 20


def _count(plan: _Plan, times: NsArray) -> int:
    k_gen = int(np.searchsorted(times, plan.gen_duration_ns, side="left"))
    return _count_from(plan, k_gen + 1)


def _count_from(plan: _Plan, n_time: int) -> int:
    """Queries generated: LoadGen's loop condition, with equal-issue bumps."""
    if plan.equal_issue and plan.set_len > 0:
        m0 = plan.min_queries + (-plan.min_queries) % plan.set_len
        extra = max(0, n_time - m0)
        return m0 + plan.set_len * (-(-extra // plan.set_len))
    return max(plan.min_queries, n_time, 1)
