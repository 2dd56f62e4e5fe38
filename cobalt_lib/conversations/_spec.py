"""A dataset item that is a conversation: scripted user turns, or a scenario for a simulated user.

An item is a conversation when it has a `conversation` field:

    {"id": "refund", "conversation": {"turns": ["I want a refund",
                                                {"content": "Order 1234", "expected_output": "..."}]}}
    {"id": "angry", "conversation": {"goal": "get a refund for order 1234", "persona": "an impatient customer",
                                     "scenario": "...", "max_turns": 4, "stop": "...", "opening": "..."}}

`read_conversation` validates one such field with a sentence naming the field and what to fix; the
dataset reader calls it with the file and line, a run with the item's index.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import DatasetError

#: The item field that makes an item a conversation.
FIELD = "conversation"
#: The most user turns a simulated conversation may have.
MAX_TURNS = 50
DEFAULT_TURNS = 5

_SCRIPT_KEYS = ("turns",)
_SCENARIO_KEYS = ("goal", "persona", "scenario", "max_turns", "stop", "opening")
_TURN_KEYS = ("content", "expected_output")


@dataclass(frozen=True)
class ScriptedTurn:
    """One user turn of a script, and what the assistant should answer to it when the item says."""

    content: str
    expected_output: Any = None
    has_expected: bool = False


@dataclass(frozen=True)
class Script:
    """The user's turns, played in order: the agent is called once after each."""

    turns: tuple[ScriptedTurn, ...]

    @property
    def max_turns(self) -> int:
        return len(self.turns)


@dataclass(frozen=True)
class Scenario:
    """What a simulated user is told: who it is, what it wants, when to stop, and at most how many turns."""

    goal: str
    persona: str | None = None
    scenario: str | None = None
    max_turns: int = DEFAULT_TURNS
    stop: str | None = None
    opening: str | None = None

    def describe(self) -> dict[str, Any]:
        """The scenario as the simulated user's cache key holds it."""
        return {"goal": self.goal, "persona": self.persona, "scenario": self.scenario, "max_turns": self.max_turns,
                "stop": self.stop, "opening": self.opening}


Conversation = Script | Scenario


def is_conversation(item: Mapping[str, Any]) -> bool:
    return isinstance(item, Mapping) and item.get(FIELD) is not None


def conversation_of(item: Mapping[str, Any], where: str = "the dataset item") -> Conversation | None:
    """The item's conversation (None when it is a single-turn item); a bad one raises DatasetError."""
    if not is_conversation(item):
        return None
    return read_conversation(item[FIELD], where)


def read_conversation(value: Any, where: str) -> Conversation:
    """The conversation a `conversation` field holds (a JSON string too: a CSV cell), or one DatasetError
    sentence naming `where`, the field and what to write instead."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: field '{FIELD}' is not valid JSON ({exc.msg}); give an object with "
                               "'turns' or 'goal'.") from None
    if not isinstance(value, Mapping):
        raise DatasetError(f"{where}: field '{FIELD}' must be an object with 'turns' (the user's scripted turns) or "
                           f"'goal' (a simulated user's scenario), got {_kind(value)}.")
    if "turns" in value and "goal" in value:
        raise DatasetError(f"{where}: field '{FIELD}' has both 'turns' and 'goal'; give the user's scripted turns or "
                           "a simulated user's goal, not both.")
    if "turns" in value:
        _no_unknown(value, _SCRIPT_KEYS, where, FIELD, hint=" (a script takes only 'turns')")
        return Script(turns=_turns(value["turns"], where))
    if "goal" not in value:
        _no_unknown(value, _SCRIPT_KEYS + _SCENARIO_KEYS, where, FIELD)
        raise DatasetError(f"{where}: field '{FIELD}' needs 'turns' (a list of the user's messages) or 'goal' (what a "
                           "simulated user wants), and has neither.")
    _no_unknown(value, _SCENARIO_KEYS, where, FIELD)
    texts = {key: _text(value, key, where, required=key == "goal") for key in ("goal", "persona", "scenario", "stop",
                                                                             "opening")}
    turns = value.get("max_turns", DEFAULT_TURNS)
    if isinstance(turns, bool) or not isinstance(turns, int) or not 1 <= turns <= MAX_TURNS:
        raise DatasetError(f"{where}: field '{FIELD}.max_turns' must be a whole number from 1 to {MAX_TURNS} (the most "
                           f"user turns), got {json.dumps(turns, default=str)}.")
    goal = texts.pop("goal")
    assert goal is not None
    return Scenario(goal=goal, max_turns=turns, **texts)


def _turns(value: Any, where: str) -> tuple[ScriptedTurn, ...]:
    if not isinstance(value, list) or not value:
        raise DatasetError(f"{where}: field '{FIELD}.turns' must be a non-empty list of the user's messages, got "
                           f"{_kind(value)}.")
    turns = []
    for i, turn in enumerate(value):
        name = f"{FIELD}.turns[{i}]"
        if isinstance(turn, str) and turn.strip():
            turns.append(ScriptedTurn(turn))
            continue
        if isinstance(turn, Mapping):
            _no_unknown(turn, _TURN_KEYS, where, name)
            content = turn.get("content")
            if isinstance(content, str) and content.strip():
                turns.append(ScriptedTurn(content, turn.get("expected_output"), "expected_output" in turn))
                continue
            raise DatasetError(f"{where}: field '{name}.content' must be the user's message (a non-empty string), "
                               f"got {_kind(content)}.")
        raise DatasetError(f"{where}: field '{name}' must be the user's message (a non-empty string, or an object "
                           f"with 'content' and 'expected_output'), got {_kind(turn)}.")
    return tuple(turns)


def _text(value: Mapping[str, Any], key: str, where: str, *, required: bool) -> str | None:
    text = value.get(key)
    if text is None and not required:
        return None
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{where}: field '{FIELD}.{key}' must be a non-empty string, got {_kind(text)}.")
    return text


def _no_unknown(value: Mapping[str, Any], known: tuple[str, ...], where: str, name: str, hint: str = "") -> None:
    for key in value:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            fix = f"did you mean '{close[0]}'?" if close else f"it takes {', '.join(repr(k) for k in known)}."
            raise DatasetError(f"{where}: field '{name}' has an unknown key {str(key)!r}{hint}; {fix}")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else f"the string {value[:40]!r}"
    shown = json.dumps(value, default=str)
    return f"{type(value).__name__} {shown[:40]}{'…' if len(shown) > 40 else ''}"
