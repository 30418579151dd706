"""The mock's agentic parts, pure: the deltas of an answer, the prompt it counts."""

from __future__ import annotations

import json

import pytest

from infermeter.errors import ConfigError
from infermeter.servers.mock_agentic import AgenticStream, answer_deltas, full_message
from infermeter.servers.mock_stream import parse_request


def test_reasoning_comes_first_then_text_or_one_call() -> None:
    cfg = AgenticStream(3, "reasoning", "always")
    text = answer_deltas(cfg, 5, tool=False)
    assert text == [{"reasoning": "think "}] * 3 + [{"content": "tok "}] * 2
    call = answer_deltas(cfg, 5, tool=True)
    assert call[:3] == [{"reasoning": "think "}] * 3
    first, second = (d["tool_calls"][0] for d in call[3:])
    assert first["id"] == "call_mock_0" and first["function"]["name"] == "bash"
    assert "id" not in second
    # a call always keeps one token, even when reasoning would take them all
    assert len(answer_deltas(cfg, 2, tool=True)) == 2
    assert "tool_calls" in answer_deltas(cfg, 1, tool=True)[0]
    message = full_message(cfg, 6, tool=True)
    assert message["reasoning"] == "think " * 3 and message["content"] is None
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {
        "command": "tok ls"
    }


def test_when_tools_calls_only_when_the_request_offers_tools() -> None:
    cfg = AgenticStream(tool_calls="when-tools")
    assert cfg.active and cfg.calls_tool({"tools": [{}]})
    assert not cfg.calls_tool({"tools": []}) and not cfg.calls_tool({})
    assert not AgenticStream().active


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (AgenticStream(-1), "--reasoning-tokens -1"),
        (AgenticStream(reasoning_field="thoughts"), "Unknown reasoning field"),
        (AgenticStream(tool_calls="sometimes"), "Unknown tool-call mode"),
    ],
)
def test_bad_settings_are_one_line(cfg: AgenticStream, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        cfg.validate()


def test_the_prompt_counts_reasoning_and_tool_calls_never_none() -> None:
    messages = [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "look first",
            "tool_calls": [{"function": {"name": "bash", "arguments": "ls -la"}}],
        },
        {"role": "tool", "tool_call_id": "x", "content": "a.py"},
    ]
    body = json.dumps({"messages": messages}).encode()
    parsed = parse_request(body, chat=True, in_flight=0)
    assert parsed.words == ("fix", "it", "look", "first", "bash", "ls", "-la", "a.py")
