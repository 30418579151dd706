"""The agentic benchmarks' registry and the inline-accuracy rule."""

from __future__ import annotations

import json

import pytest

from infermeter.errors import ConfigError
from infermeter.workloads.agentic.accuracy import (
    ModelTurn,
    bash_actions,
    inline_accuracy,
    model_intent,
    score_turn,
)
from infermeter.workloads.agentic.benchmarks import get_agentic, list_agentic
from infermeter.workloads.agentic.trajectories import Row


def test_both_endpoints_agentic_benchmarks_carry_their_published_values() -> None:
    assert [b.name for b in list_agentic()] == [
        "kimi-k3-agentic",
        "qwen3.6-35b-a3b-agentic",
    ]
    kimi = get_agentic("Kimi-K3")
    assert kimi.request_fields() == {
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 8192,
    }
    assert (kimi.inline_accuracy_min, kimi.osl_per_turn) == (58.32, (425.0, 520.0))
    assert kimi.params_total == 2.8e12 and kimi.context_tokens == 1_048_576
    qwen = get_agentic("qwen/qwen3.6-35b-a3b")
    fields = qwen.request_fields()
    assert fields["top_k"] == 20 and fields["presence_penalty"] == 1.5
    assert fields["chat_template_kwargs"] == {"preserve_thinking": True}
    assert (qwen.inline_accuracy_min, qwen.swebench_accuracy_min) == (55.86, 69.0)
    assert qwen.osl_ok(383.0) and not qwen.osl_ok(423.0)
    assert all(b.sources for b in list_agentic())


def test_an_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'kimi-k3-agentic'"):
        get_agentic("kimi-k3-agentc")


def test_the_official_rules_are_listed_when_broken() -> None:
    kimi = get_agentic("kimi-k3")
    ok = {
        "num_trajectories": 1226, "dataset_size": 613, "enable_salt": True,
        "inject_tool_delay": True, "stop_issuing_on_first_user_complete": False,
    }  # fmt: skip
    assert kimi.official_problems(**ok) == []  # type: ignore[arg-type]
    bad = {**ok, "num_trajectories": 64, "dataset_size": 64, "enable_salt": False}
    problems = kimi.official_problems(**bad)  # type: ignore[arg-type]
    assert problems == [
        "the dataset has 64 trajectories, not the official 613",
        "num_trajectories 64 is not a multiple of 613",
        "salting is off (enable_salt must be true)",
    ]


def _bash(*commands: str) -> tuple[dict[str, object], ...]:
    return tuple(
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": c})},
        }
        for i, c in enumerate(commands)
    )


def test_bash_actions_normalise_as_the_reference_documents() -> None:
    calls = _bash(
        "CUDA_VISIBLE_DEVICES=0 /usr/bin/python3.11 -m pytest | grep -c 'a; ls'",
        "sudo apt-get install x && rg foo",
        "unknowncmd --flag",
    )
    assert bash_actions(calls) == ["python", "grep", "apt", "grep"]
    other_tool = {"function": {"name": "editor", "arguments": '{"command": "ls"}'}}
    assert (
        bash_actions([other_tool, {"function": {"name": "bash", "arguments": "{"}}])
        == []
    )


def test_model_intent_prefers_the_explicit_form() -> None:
    assert (
        model_intent(ModelTurn(content="I001 then I002, final intent: i042")) == "I042"
    )
    assert model_intent(ModelTurn(reasoning="maybe I007 or I008")) == "I008"
    assert model_intent(ModelTurn(content="none")) is None


def test_coding_turns_score_the_multiset_overlap_and_missing_turns_zero() -> None:
    expected = Row("c1", 2, "assistant", tool_calls=_bash("ls && ls", "git diff"))
    half = ModelTurn(tool_calls=_bash("ls", "cat x"))
    # want {ls: 2, git: 1}, got {ls: 1, cat: 1}: overlap 1 over union 4
    assert score_turn("c1", expected, half) == 0.25
    text_only = Row("c1", 4, "assistant", content="done")
    workflow = Row(
        "sim_7", 2, "assistant", content="x", extra={"intent_codes": ["I042"]}
    )
    result = inline_accuracy(
        [
            ("c1", 1, expected, half),
            ("c1", 1, text_only, ModelTurn(content="done")),  # nothing to score
            ("sim_7", 1, workflow, ModelTurn(content="intent: I042")),
            ("sim_7", 2, workflow, None),  # issued, never answered
        ]
    )
    assert (result.scored, result.missing, result.excluded) == (3, 1, 1)
    assert result.percent == round(100 * (0.25 + 1.0 + 0.0) / 3, 2)
    assert result.passes(41.0) and not result.passes(42.0)
    assert inline_accuracy([]).percent is None
