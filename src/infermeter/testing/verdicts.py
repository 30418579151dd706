"""Telling a client that fell behind from a wrong result, in tests on busy machines.

A run on a machine whose cores are taken by others may end INVALID because its
requests went out late. Such a run fails only latency bounds, early stopping
or its own connects timing out, and says it was client-bound; other failed
samples, too few queries or an error are never the machine's fault.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_LATENCY_REASON = re.compile(
    r"^((TTFT|TPOT) constrain not met: )?Reduce target QPS to improve latency"
    r"|^(TTFT |TPOT )?early stopping: "
    # A starved client cannot finish its own connects to a loopback server in
    # time: samples failed by that alone (and by nothing else) are lateness too.
    r"|^\d+ samples failed: \d+ x timeout: no connection within [\d.]+ s$"
)


def only_latency_reasons(reasons: Iterable[str]) -> bool:
    """True when there is a reason and each is one a late client causes."""
    found = [r.strip().lstrip("* ") for r in reasons]
    return bool(found) and all(_LATENCY_REASON.match(r) for r in found)
