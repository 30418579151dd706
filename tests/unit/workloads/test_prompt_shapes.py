"""``--prompts`` shapes: shared system prompts and growing multi-turn conversations."""

from __future__ import annotations

import pytest

from infermeter.errors import ConfigError
from infermeter.workloads.datasets.factory import synthetic_text
from infermeter.workloads.datasets.lengths import fixed
from infermeter.workloads.datasets.shapes import PromptShape, parse_prompt_shape


def test_parse_shapes() -> None:
    assert parse_prompt_shape("random") == PromptShape()
    assert parse_prompt_shape("shared-prefix:8:512") == PromptShape(
        "shared-prefix", groups=8, prefix_tokens=512
    )
    assert parse_prompt_shape("multi-turn:4").turns == 4
    assert parse_prompt_shape("multi-turn:4").describe() == "multi-turn:4"


@pytest.mark.parametrize(
    "text", ["shared-prefix:8", "multi-turn:0", "multi-turn:x", "zipf:1", "random:3"]
)
def test_bad_shape_is_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match="--prompts"):
        parse_prompt_shape(text)


def test_shared_prefix_prompts_share_their_group_prefix() -> None:
    shape = parse_prompt_shape("shared-prefix:2:64")
    source = synthetic_text(8, shape, input_len=fixed(80), output_len=fixed(4))
    words = [source.read(i).prompt.split() for i in range(4)]  # type: ignore[union-attr]
    assert words[0][:64] == words[2][:64] != words[1][:64]
    assert words[0][64:] != words[2][64:]  # each user's own text after it


def test_conversation_turns_grow_and_repeat_the_turn_before() -> None:
    shape = parse_prompt_shape("multi-turn:3")
    source = synthetic_text(6, shape, input_len=fixed(10), output_len=fixed(5), seed=1)
    assert len(source) == 6  # 2 conversations x 3 turns, laid out turn by turn
    first, second, third = (source.read(c) for c in (0, 2, 4))  # conversation 0
    assert [role for role, _ in third.messages or ()] == [
        "user", "assistant", "user", "assistant", "user"
    ]  # fmt: skip
    for before, after in ((first, second), (second, third)):
        assert after.prompt.startswith(before.prompt)  # type: ignore[union-attr]
        assert len(after.input_ids) > len(before.input_ids)  # type: ignore[arg-type]
    # The reply the next turn repeats is the reference of the turn before.
    assert second.messages[1][1] == first.reference  # type: ignore[index]
    assert not source.read(1).prompt.startswith(first.prompt)  # type: ignore[union-attr]
