"""Agentic turns over the HTTP client's seam, against a real loopback server.

A turn the server fails (HTTP 500, a connection reset mid-stream, a malformed
chunk, a stall before the first token) fails with the very reason text the
openai SUT gives a sample failed the same way (the API key redacted), and the
rest of its conversation is aborted unsent, while other conversations
complete. The key from the environment reaches the
server on every turn, with the conversation's X-Session-ID.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from infermeter.loadgen.interfaces import QueryBatch
from infermeter.runs.agentic import AgenticResult, AgenticSettings
from infermeter.servers.background import ThreadedServer
from infermeter.servers.mock import MockConfig, MockServer
from infermeter.servers.mock_agentic import AgenticStream
from infermeter.suts.http_local import OpenAIHttpSUT
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, Timeouts
from infermeter.suts.prompts import Prompt
from infermeter.testing import RecordingSink
from infermeter.testing.agentic_http import replay
from infermeter.workloads.agentic.trajectories import Trajectory, read_trajectories

pytestmark = pytest.mark.integration

KEY = "hunter2hunter"  # not id-shaped: only the redaction can hide it
LIMITS = Timeouts(first_token_s=1.0, total_s=0.0)  # a stall fails in 1 s


def _chunk(delta: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": delta}]}).encode() + b"\n\n"


class _TurnServer:
    """Answers each chat turn with reasoning then text, unless the last message
    names a fault: ``FAULT-500`` (an error body quoting the caller's key),
    ``FAULT-RESET`` (the connection dropped after the first delta),
    ``FAULT-MALFORMED`` (a chunk that is not JSON after it) or ``FAULT-STALL``
    (nothing for seconds)."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, str], list[dict[str, Any]]]] = []

    def build(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        return app

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append((dict(request.headers), body["messages"]))
        last = str(body["messages"][-1].get("content") or "")
        if "FAULT-500" in last:
            caller = request.headers.get("Authorization", "")
            error = {"error": {"message": f"overloaded, caller {caller}"}}
            return web.json_response(error, status=500)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if "FAULT-STALL" in last:
            await asyncio.sleep(5)  # past the client's first-token limit
        await resp.write(_chunk({"role": "assistant", "reasoning_content": "hm "}))
        if "FAULT-RESET" in last:
            assert request.transport is not None
            request.transport.abort()
            return resp
        if "FAULT-MALFORMED" in last:
            await resp.write(b"data: {oops\n\n")
        await resp.write(_chunk({"content": "fine"}))
        await resp.write(
            b'data: {"choices": [], "usage": {"completion_tokens": 2}}\n\n'
        )
        await resp.write(b"data: [DONE]\n\n")
        return resp


class _OnePrompt:
    def __init__(self, text: str) -> None:
        self.text = text

    def prompt(self, index: int) -> Prompt:
        return Prompt(text=self.text, max_tokens=4)


def _sut_reason(url: str, text: str, key: ApiKey) -> str:
    """The reason the openai SUT gives a sample whose prompt is ``text``."""
    config = OpenAIConfig(url=url, model="m", api="chat", timeouts=LIMITS)
    with OpenAIHttpSUT(config, _OnePrompt(text), api_key=key) as sut:
        sink = RecordingSink()
        ids = np.zeros(1, dtype=np.int64)
        sut.issue_query(QueryBatch(ids, ids, ids), sink)
        assert sink.wait(1, timeout_s=20)
    return sink.failed[0]


def _trajectories(tmp_path: Path, fault: str) -> list[Trajectory]:
    rows = []
    for cid, users in (("bad", ["hello", fault, "after"]), ("good", ["a", "b"])):
        turn = 0
        for k, content in enumerate(users):
            turn += 1
            row = {"conversation_id": cid, "turn": turn, "role": "user"}
            rows.append(
                {**row, "content": content, **({"system": "s"} if k == 0 else {})}
            )
            turn += 1
            rows.append({**row, "turn": turn, "role": "assistant", "content": "ok"})
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return read_trajectories(path)


def _replay(url: str, data: list[Trajectory], key: ApiKey) -> AgenticResult:
    settings = AgenticSettings(concurrency=2, seed=1, turn_timeout_s=30.0)
    return asyncio.run(replay(url, "m", data, settings, api_key=key, timeouts=LIMITS))


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("FAULT-500", "HTTP 500"),
        ("FAULT-RESET", "connection reset mid-response"),
        ("FAULT-MALFORMED", "malformed stream chunk"),
        ("FAULT-STALL", "timeout: no first token within 1 s"),
    ],
)
def test_a_failed_turn_has_the_samples_reason_and_ends_its_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, kind: str
) -> None:
    monkeypatch.setenv("AGENTIC_KEY", KEY)
    key = ApiKey.load(env="AGENTIC_KEY")
    assert key is not None
    server = _TurnServer()
    with ThreadedServer(server) as url:
        result = _replay(url, _trajectories(tmp_path, fault), key)
        sut_reason = _sut_reason(url, f"{fault} now", key)
    turns = {(t.conversation_id, t.client_turn): t for t in result.turns}
    assert [turns["good", i].status for i in (0, 1)] == ["ok", "ok"]
    bad = [turns["bad", i] for i in (0, 1, 2)]
    assert [t.status for t in bad] == ["ok", "failed", "aborted"]
    assert bad[1].error == sut_reason and bad[1].error.startswith(kind)
    assert KEY not in bad[1].error
    if fault == "FAULT-500":
        assert "Bearer ***" in bad[1].error  # the server quoted the key: redacted
    assert bad[2].error == "turn 3 failed" and bad[2].issued_s is None
    assert [t.status for t in result.trajectories if t.source_id == "bad"] == ["failed"]
    agentic = [(h, m) for h, m in server.seen if "X-Session-ID" in h]
    assert all(m[-1]["content"] != "after" for _, m in agentic)  # never sent
    assert {h["Authorization"] for h, _ in server.seen} == {f"Bearer {KEY}"}
    assert sorted({h["X-Session-ID"] for h, _ in agentic}) == ["bad", "good"]
    assert len(agentic) == 4  # bad: 2 sent; good: 2


def test_ttft_through_the_seam_is_the_first_reasoning_delta(tmp_path: Path) -> None:
    """20 reasoning deltas before text: TTFT is the first one's (planned 0.3 s),
    not the first text's (20 gaps later); tokens include the reasoning."""
    config = MockConfig(
        mode="timed",
        ttft="const:0.3",
        itl="const:0.02",
        agentic=AgenticStream(20, "reasoning_content", "never"),
    )
    rows = [
        {"conversation_id": "c", "turn": 1, "role": "user", "system": "s",
         "content": "go"},
        {"conversation_id": "c", "turn": 2, "role": "assistant",
         "content": " ".join(["w"] * 30)},
    ]  # fmt: skip
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with MockServer(config) as url:
        settings = AgenticSettings(concurrency=1, turn_timeout_s=30.0)
        result = asyncio.run(
            replay(url, "mock-model", read_trajectories(path), settings)
        )
    (turn,) = result.turns
    answer = turn.answer
    assert turn.status == "ok" and answer is not None and answer.ttft_s is not None
    assert answer.reasoning == "think " * 20 and answer.content == "tok " * 10
    assert (answer.output_tokens, answer.token_source) == (30, "usage")
    assert turn.done_s is not None and turn.issued_s is not None
    # at least the planned first-token time; the 29 later deltas came after it
    assert 0.29 <= answer.ttft_s < turn.done_s - turn.issued_s
