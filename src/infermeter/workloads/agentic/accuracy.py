"""Inline accuracy of an agentic run: the rule the reference client documents.

Each issued client turn is paired with the assistant row that follows it in
the dataset (its expected answer). Two kinds of conversation
(``AgenticInferenceInlineScorer`` in mlcommons/endpoints
``evaluation/scoring.py``):

* **workflow** (conversation id ``sim_<digits>``): the expected row's
  ``intent_codes``; the model scores 1 when the intent it names
  (``intent: I123``, else the last bare ``I123`` in its reasoning or text) is
  one of them.
* **coding** (every other id): the executables of the ``bash`` tool calls,
  normalised (wrappers such as ``sudo`` and ``VAR=`` assignments dropped,
  paths and Python version suffixes cut, aliases such as ``python3`` ->
  ``python``); the score is the multiset overlap over the multiset union of
  expected and model executables.

Turns whose expected row has nothing to score are left out; an issued turn
with no model answer (failed, timed out, never completed) scores 0. The
score is the mean, reported here in percent as the checker's floors are.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from infermeter.workloads.agentic.trajectories import Row
from infermeter.workloads.agentic.turns import Message

_WORKFLOW_ID = re.compile(r"^sim_\d+$")
_INTENT = re.compile(r"\bintent:\s*(I\d{3})\b", re.IGNORECASE)
_BARE_INTENT = re.compile(r"\bI(\d{3})\b")
_SEPARATORS = re.compile(r"\|\||\||&&|;|\n")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PY_VERSION = re.compile(r"\.\d+(\.\d+)?$")
_WRAPPERS = frozenset({"env", "time", "nice", "sudo", "exec", "command"})


# The executables the reference scores as themselves; _aliases adds the rest.
_SELF = (
    "python pip pytest pylint cython make conda cat head tail wc diff grep "
    "sed awk tr sort uniq cut find ls xargs cp mv rm mkdir touch tee source "
    "which alias unset export git curl true false timeout date apt yum"
)


def _aliases() -> dict[str, str]:
    table = {name: name for name in _SELF.split()}
    table.update(
        python2="python", python3="python", py="python", pip3="pip",
        less="cat", more="cat", egrep="grep", fgrep="grep", rg="grep", ag="grep",
        gawk="awk", locate="find", wget="curl",
    )  # fmt: skip
    table.update({"sphinx-build": "sphinx", "sphinx-quickstart": "sphinx"})
    table.update({".": "source", "apt-get": "apt"})
    return table


ALIASES = _aliases()


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """What the model answered on one turn."""

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[Message, ...] = ()


@dataclass(frozen=True, slots=True)
class ScoredTurn:
    conversation_id: str  # the dataset's (source) id
    repeat: int
    turn: int  # the expected assistant row's turn
    domain: str
    score: float
    missing: bool


@dataclass(frozen=True, slots=True)
class InlineAccuracy:
    """Inline accuracy over the scorable issued turns, in percent."""

    percent: float | None
    scored: int
    missing: int
    excluded: int
    turns: tuple[ScoredTurn, ...]

    def passes(self, floor_percent: float) -> bool:
        return self.percent is not None and self.percent >= floor_percent


def domain_of(conversation_id: str) -> str:
    return "workflow" if _WORKFLOW_ID.match(conversation_id) else "coding"


def bash_actions(tool_calls: Iterable[Message]) -> list[str]:
    """Normalised executables of the ``bash`` tool calls, in order."""
    out: list[str] = []
    for call in tool_calls:
        command = _bash_command(call)
        if command is None:
            continue
        for stage in _SEPARATORS.split(_QUOTED.sub(" ", command)):
            action = _stage_action(stage.split())
            if action:
                out.append(action)
    return out


def _bash_command(call: Any) -> str | None:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or fn.get("name") != "bash":
        return None
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    command = args.get("command") or args.get("cmd")
    return command if isinstance(command, str) else None


def _stage_action(tokens: list[str]) -> str | None:
    while tokens and (_ASSIGNMENT.match(tokens[0]) or tokens[0] in _WRAPPERS):
        tokens = tokens[1:]
    if not tokens:
        return None
    executable = _PY_VERSION.sub("", tokens[0].rsplit("/", 1)[-1].lower())
    return ALIASES.get(executable)


def model_intent(turn: ModelTurn) -> str | None:
    """The intent code the model names: ``intent: I123`` first, else the last bare one."""
    texts = (turn.reasoning, turn.content)
    for text in texts:
        match = _INTENT.search(text)
        if match:
            return match.group(1).upper()
    for text in texts:
        bare = _BARE_INTENT.findall(text)
        if bare:
            return f"I{bare[-1]}"
    return None


def _intents(row: Row) -> set[str]:
    codes = row.extra.get("intent_codes")
    if not isinstance(codes, list | tuple):
        return set()
    return {c.upper() for c in codes if isinstance(c, str) and c}


def score_turn(conversation_id: str, expected: Row, model: ModelTurn) -> float | None:
    """One turn's score in [0, 1]; None when the expected row has nothing to score."""
    if domain_of(conversation_id) == "workflow":
        intents = _intents(expected)
        if not intents:
            return None
        return 1.0 if model_intent(model) in intents else 0.0
    want = Counter(bash_actions(expected.tool_calls))
    if not want:
        return None
    got = Counter(bash_actions(model.tool_calls))
    return sum((want & got).values()) / sum((want | got).values())


def inline_accuracy(
    issued: Sequence[tuple[str, int, Row | None, ModelTurn | None]],
) -> InlineAccuracy:
    """Score issued turns: ``(source id, repeat, expected row, model answer or None)``."""
    turns: list[ScoredTurn] = []
    excluded = 0
    for cid, repeat, expected, model in issued:
        if expected is None:
            excluded += 1
            continue
        score = score_turn(cid, expected, model or ModelTurn())
        if score is None:
            excluded += 1
            continue
        turns.append(
            ScoredTurn(cid, repeat, expected.turn, domain_of(cid), score, model is None)
        )
    mean = sum(t.score for t in turns) / len(turns) if turns else None
    return InlineAccuracy(
        percent=None if mean is None else round(100.0 * mean, 2),
        scored=len(turns),
        missing=sum(t.missing for t in turns),
        excluded=excluded,
        turns=tuple(turns),
    )
