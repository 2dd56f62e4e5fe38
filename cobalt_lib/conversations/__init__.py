"""Multi-turn conversations: items that are scripted or simulated conversations, and the simulated user.

The names load on first use (PEP 562): the evaluators read a conversation's spec on every import of
cobalt, and need not load the LLM client the simulated user speaks through.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._simulator import SimulatedUser
    from ._spec import Scenario, Script, ScriptedTurn, conversation_of, is_conversation, read_conversation

_EXPORTS = {"SimulatedUser": "._simulator", **{name: "._spec" for name in (
    "Scenario", "Script", "ScriptedTurn", "conversation_of", "is_conversation", "read_conversation")}}

__all__ = ["Scenario", "Script", "ScriptedTurn", "SimulatedUser", "conversation_of", "is_conversation",
           "read_conversation"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
