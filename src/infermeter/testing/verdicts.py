"""Telling a client that fell behind from a wrong result, in tests on busy machines.

A run on a machine whose cores are taken by others may end INVALID because its
requests went out late. Such a run fails only latency bounds or early
stopping, and says it was client-bound; failed samples, too few queries or an
error are never the machine's fault.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_LATENCY_REASON = re.compile(
    r"^((TTFT|TPOT) constrain not met: )?Reduce target QPS to improve latency"
    r"|^(TTFT |TPOT )?early stopping: "
)


def only_latency_reasons(reasons: Iterable[str]) -> bool:
    """True when there is a reason and each is a latency bound or early stopping."""
    found = [r.strip().lstrip("* ") for r in reasons]
    return bool(found) and all(_LATENCY_REASON.match(r) for r in found)
