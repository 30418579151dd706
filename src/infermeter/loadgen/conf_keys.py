"""The conf keys LoadGen 6.0.17 reads, which RunSettings field each sets, and how.

Checked against the ``mlcommons-loadgen`` 6.0.17 wheel key by key: the
scenario each key is looked up under, units, which booleans mean "== 1" and
which mean "!= 0", and which keys are read only when another is on.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from infermeter.errors import ConfFileError
from infermeter.loadgen.cnumbers import (
    U64_MAX,
    is_octal_literal,
    strtod_full,
    strtoull_prefix,
)
from infermeter.loadgen.settings import Mode

SCENARIO_NAMES = ("SingleStream", "MultiStream", "Server", "Offline")
MS = 1_000_000  # conf times are milliseconds; settings are nanoseconds
PERCENT = 0.01
I32_MAX = (1 << 31) - 1


class Kind(enum.Enum):
    """How a value is read (the official lookup reads it as uint64 or double)."""

    INT = "uint64"
    INT32 = "uint64 cast to int"
    DOUBLE = "double"
    DOUBLE_NS = "double, stored as whole ns"  # official field is a double
    TRUE_IF_NONZERO = "bool: any non-zero value is true"
    TRUE_IF_ONE = "bool: only 1 is true"
    MODE = "mode 0..3"


@dataclass(frozen=True, slots=True)
class ConfEntry:
    """One ``model.scenario.key = value`` line of a conf file."""

    path: str
    line_no: int
    model: str
    scenario: str
    key: str
    value: str

    @property
    def name(self) -> str:
        return f"{self.model}.{self.scenario}.{self.key}"

    def error(self, problem: str) -> ConfFileError:
        return ConfFileError(self.path, self.line_no, self.name, problem)

    def warning(self, problem: str) -> str:
        return f"{self.path}:{self.line_no}: {self.name}: {problem}"


@dataclass(frozen=True, slots=True)
class Read:
    """One lookup the official ``FromConfig`` makes."""

    key: str
    field: str
    kind: Kind
    scenario: str | None = None  # None: the scenario passed in; else fixed
    scale: float = 1
    gate: str | None = None  # read only while this RunSettings flag is true


# In the official order: the gates (use_token_latencies, infer_token_latencies)
# are read before the keys they gate.
READS: tuple[Read, ...] = (
    Read("mode", "mode", Kind.MODE),
    Read("min_duration", "min_duration_ms", Kind.INT),
    Read("max_duration", "max_duration_ms", Kind.INT),
    Read("min_query_count", "min_query_count", Kind.INT),
    Read("max_query_count", "max_query_count", Kind.INT),
    Read("qsl_rng_seed", "qsl_rng_seed", Kind.INT),
    Read("sample_index_rng_seed", "sample_index_rng_seed", Kind.INT),
    Read("schedule_rng_seed", "schedule_rng_seed", Kind.INT),
    Read("accuracy_log_rng_seed", "accuracy_log_rng_seed", Kind.INT),
    Read(
        "accuracy_log_probability",
        "accuracy_log_probability",
        Kind.DOUBLE,
        scale=PERCENT,
    ),
    Read("accuracy_log_sampling_target", "accuracy_log_sampling_target", Kind.INT),
    Read("test05", "test05", Kind.TRUE_IF_NONZERO),
    Read("test05_qsl_rng_seed", "test05_qsl_rng_seed", Kind.INT),
    Read("test05_sample_index_rng_seed", "test05_sample_index_rng_seed", Kind.INT),
    Read("test05_schedule_rng_seed", "test05_schedule_rng_seed", Kind.INT),
    Read("print_timestamps", "print_timestamps", Kind.TRUE_IF_NONZERO),
    Read("performance_issue_unique", "performance_issue_unique", Kind.TRUE_IF_NONZERO),
    Read("performance_issue_same", "performance_issue_same", Kind.TRUE_IF_NONZERO),
    Read("performance_issue_same_index", "performance_issue_same_index", Kind.INT),
    Read(
        "performance_sample_count_override",
        "performance_sample_count_override",
        Kind.INT,
    ),
    Read("accuracy_sample_count_override", "accuracy_sample_count_override", Kind.INT),
    Read(
        "sample_concatenate_permutation",
        "sample_concatenate_permutation",
        Kind.TRUE_IF_ONE,
    ),
    Read("use_token_latencies", "use_token_latencies", Kind.TRUE_IF_ONE),
    Read("ttft_latency", "ttft_latency", Kind.INT, "Server", MS, "use_token_latencies"),
    Read("tpot_latency", "tpot_latency", Kind.INT, "Server", MS, "use_token_latencies"),
    Read("infer_token_latencies", "infer_token_latencies", Kind.TRUE_IF_ONE),
    Read(
        "token_latency_scaling_factor",
        "token_latency_scaling_factor",
        Kind.INT,
        gate="infer_token_latencies",
    ),
    Read(
        "target_latency_percentile",
        "single_stream_target_latency_percentile",
        Kind.DOUBLE,
        "SingleStream",
        PERCENT,
    ),
    Read(
        "target_latency",
        "single_stream_expected_latency_ns",
        Kind.DOUBLE_NS,
        "SingleStream",
        MS,
    ),
    Read(
        "target_latency_percentile",
        "multi_stream_target_latency_percentile",
        Kind.DOUBLE,
        "MultiStream",
        PERCENT,
    ),
    Read(
        "target_latency",
        "multi_stream_expected_latency_ns",
        Kind.DOUBLE_NS,
        "MultiStream",
        MS,
    ),
    Read(
        "samples_per_query", "multi_stream_samples_per_query", Kind.INT, "MultiStream"
    ),
    Read(
        "target_latency_percentile",
        "server_target_latency_percentile",
        Kind.DOUBLE,
        "Server",
        PERCENT,
    ),
    Read("target_latency", "server_target_latency_ns", Kind.INT, "Server", MS),
    Read("target_qps", "server_target_qps", Kind.DOUBLE, "Server"),
    Read("coalesce_queries", "server_coalesce_queries", Kind.TRUE_IF_NONZERO, "Server"),
    Read("max_async_queries", "server_max_async_queries", Kind.INT32, "Server"),
    Read("target_qps", "offline_expected_qps", Kind.DOUBLE, "Offline"),
)

# Read only from mlperf.conf; the official parser skips them in user.conf
# and audit.config.
MLPERF_ONLY_KEYS = frozenset(
    {
        "qsl_rng_seed",
        "sample_index_rng_seed",
        "schedule_rng_seed",
        "accuracy_log_probability",
        "test05",
        "test05_qsl_rng_seed",
        "test05_sample_index_rng_seed",
        "test05_schedule_rng_seed",
    }
)
# In the official mlperf.conf but never read by LoadGen: accepted, with a warning.
UNREAD_KEYS = frozenset({"target_duration"})
KNOWN_KEYS = frozenset(r.key for r in READS) | UNREAD_KEYS


def scenarios_read(key: str) -> frozenset[str] | None:
    """The fixed scenarios a key is looked up under, or None if any scenario is."""
    fixed = {r.scenario for r in READS if r.key == key}
    if None in fixed or not fixed:
        return None
    return frozenset(s for s in fixed if s is not None)


def convert(read: Read, entry: ConfEntry) -> tuple[object, list[str]]:
    """The value the official lookup stores for ``entry``, plus warnings.

    Raises ConfFileError where the official reader is silently wrong (negative or
    overflowing integers, an invalid mode, non-finite numbers).
    """
    token = entry.value
    if read.kind in (Kind.DOUBLE, Kind.DOUBLE_NS):
        return _convert_double(read, entry), []
    value, warnings = _read_uint(read, entry)
    if read.kind is Kind.MODE:
        if value > 3:
            raise entry.error(
                f"mode must be 0..3 (0 submission, 1 accuracy, 2 performance, "
                f"3 find peak), got {token!r}; LoadGen only logs an error and keeps "
                "the previous mode"
            )
        return list(Mode)[value], warnings
    if read.kind is Kind.TRUE_IF_NONZERO:
        return value != 0, warnings
    if read.kind is Kind.TRUE_IF_ONE:
        if value > 1:
            warnings.append(
                entry.warning(
                    f"LoadGen treats only 1 as true here, so {token!r} reads as "
                    "false; write 1 or 0"
                )
            )
        return value == 1, warnings
    if read.kind is Kind.INT32 and value > I32_MAX:
        raise entry.error(
            f"{token!r} is too large: LoadGen casts this key to a 32-bit int "
            f"(max {I32_MAX})"
        )
    return value, warnings


def _read_uint(read: Read, entry: ConfEntry) -> tuple[int, list[str]]:
    token = entry.value
    prefix = strtoull_prefix(token)
    if token.startswith("-") and prefix.value != 0:
        raise entry.error(
            f"negative value {token!r}: LoadGen reads it as the unsigned number "
            f"{prefix.value}; write a value >= 0"
        )
    if prefix.overflow:
        raise entry.error(f"{token!r} is above 2**64 - 1; LoadGen would read {U64_MAX}")
    warnings = []
    if prefix.used != len(token):
        warnings.append(
            entry.warning(
                f"LoadGen reads only the integer prefix of {token!r} for this key, "
                f"i.e. {prefix.value}; write a whole number"
            )
        )
    elif is_octal_literal(token):
        warnings.append(
            entry.warning(
                f"{token!r} has a leading 0, so LoadGen reads it as octal "
                f"({prefix.value}); drop the leading 0 if you meant decimal"
            )
        )
    value = prefix.value * int(read.scale)
    if value > U64_MAX:
        raise entry.error(
            f"{token!r} x {int(read.scale)} is above 2**64 - 1; LoadGen would "
            "silently wrap it"
        )
    return value, warnings


def _convert_double(read: Read, entry: ConfEntry) -> float | int:
    number = strtod_full(entry.value)
    if number is None:
        # Every accepted token parses fully as a double; this keeps strtod's
        # prefix reading for safety rather than failing.
        number = float(strtoull_prefix(entry.value).value)
    if not math.isfinite(number):
        raise entry.error(
            f"{entry.value!r} is not a finite number; LoadGen accepts it silently "
            "but no run can use it"
        )
    scaled = number * read.scale
    if read.kind is Kind.DOUBLE_NS:
        # The official field is a double; RunSettings keeps whole nanoseconds.
        return round(scaled)
    return scaled
