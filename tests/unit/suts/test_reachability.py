"""Failure reasons that group, and the watch that ends a run when nothing connects."""

from __future__ import annotations

from collections import Counter

import aiohttp
import pytest

from infermeter.suts.reachability import Reachability, mask_ids, top_reasons
from infermeter.testing import ManualClock


@pytest.mark.parametrize(
    "text",
    [
        'HTTP 500: {"error": "request chatcmpl-9f8e7d6c5b4a3f2e failed"}',
        'HTTP 500: {"error": "request chatcmpl-0a1b2c3d4e5f6a7b failed"}',
        "HTTP 500: request 3fa85f64-5717-4562-b3fc-2c963f66afa6 failed",
        "HTTP 500: request 123456789 failed",
    ],
)
def test_per_request_ids_are_masked(text: str) -> None:
    masked = mask_ids(text)
    assert "<id>" in masked and masked.startswith("HTTP 500")


def test_plain_reasons_are_kept() -> None:
    kept = (
        "HTTP 503: overloaded",
        "cannot connect: Connection refused",
        "timeout: no first token within 0.2 s",
        "connection reset mid-response",
    )
    for text in kept:
        assert mask_ids(text) == text


def test_the_top_reasons_still_add_up() -> None:
    failures = Counter({f"reason {i}": 1 for i in range(25)})
    failures["big"] = 10
    top = top_reasons(failures, limit=5)
    assert sum(top.values()) == sum(failures.values()) == 35
    assert top["big"] == 10 and top["other reasons (21 kinds)"] == 21


def _refused() -> aiohttp.ClientConnectorError:
    key = aiohttp.client_reqrep.ConnectionKey(
        "127.0.0.1", 9, False, True, None, None, None
    )
    return aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))


def test_every_request_failing_to_connect_for_the_window_fires_once() -> None:
    clock = ManualClock()
    reasons: list[str] = []
    watch = Reachability(30.0, clock)
    watch.on_unreachable = reasons.append
    watch.failed(_refused())
    clock.advance(29 * 10**9)
    watch.failed(_refused())
    assert reasons == []  # 29 s of failures: not yet
    clock.advance(2 * 10**9)
    watch.failed(_refused())
    watch.failed(_refused())
    assert len(reasons) == 1 and "unreachable" in reasons[0]


def test_any_answer_restarts_the_window_and_other_failures_do_not_count() -> None:
    clock = ManualClock()
    reasons: list[str] = []
    watch = Reachability(30.0, clock)
    watch.on_unreachable = reasons.append
    watch.failed(_refused())
    clock.advance(20 * 10**9)
    watch.reached()  # an HTTP answer, even an error, means the endpoint is there
    watch.failed(_refused())
    clock.advance(20 * 10**9)
    watch.failed(_refused())
    watch.failed(TimeoutError("read timeout"))
    assert reasons == [] and watch.reached_any
