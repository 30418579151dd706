"""``--prompts``: the shape of synthetic prompts beyond plain random text.

* ``random`` (the default): every prompt its own text.
* ``shared-prefix:GROUPS:TOKENS``: ``GROUPS`` system prompts of ``TOKENS``
  tokens, each shared by every ``GROUPS``-th sample (users of one
  application), followed by the user's own text of ``--input-len`` tokens.
* ``multi-turn:TURNS``: conversations of ``TURNS`` turns. Turn ``t``'s prompt
  is every earlier user message and reply plus a new user message
  (``--input-len`` tokens each; replies ``--output-len``), so prompts grow
  and each one starts with the one before it. Samples are laid out turn by
  turn (first turns of every conversation, then second turns, ...), so a
  load that issues samples in order sends each turn after the one before.

Both give a server's prefix cache, and a KV-aware router, something to win.
"""

from __future__ import annotations

from dataclasses import dataclass

from infermeter.errors import ConfigError

KINDS = ("random", "shared-prefix", "multi-turn")
EXAMPLE = "e.g. shared-prefix:8:512 or multi-turn:4"


@dataclass(frozen=True, slots=True)
class PromptShape:
    kind: str = "random"
    groups: int = 1  # shared-prefix: distinct system prompts
    prefix_tokens: int = 0  # shared-prefix: tokens of each
    turns: int = 1  # multi-turn: turns per conversation

    def describe(self) -> str:
        if self.kind == "shared-prefix":
            return f"shared-prefix:{self.groups}:{self.prefix_tokens}"
        if self.kind == "multi-turn":
            return f"multi-turn:{self.turns}"
        return "random"


def parse_prompt_shape(text: str) -> PromptShape:
    """``random``, ``shared-prefix:GROUPS:TOKENS`` or ``multi-turn:TURNS``."""
    kind, _, rest = text.strip().partition(":")
    try:
        numbers = [int(x) for x in rest.split(":")] if rest else []
    except ValueError:
        numbers = [-1]
    if kind == "random" and not numbers:
        return PromptShape()
    if kind == "shared-prefix" and len(numbers) == 2 and min(numbers) >= 1:
        return PromptShape(kind, groups=numbers[0], prefix_tokens=numbers[1])
    if kind == "multi-turn" and len(numbers) == 1 and numbers[0] >= 1:
        return PromptShape(kind, turns=numbers[0])
    raise ConfigError(
        f"--prompts {text!r} is not one of random, shared-prefix:GROUPS:TOKENS, "
        f"multi-turn:TURNS (positive integers), {EXAMPLE}"
    )
