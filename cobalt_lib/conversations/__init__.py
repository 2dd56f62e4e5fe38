"""The conversations wing: items that are scripted or simulated conversations, the simulated user, and a
conversation as text (its transcript turn by turn with each turn's scores, where two runs' transcripts diverged)
for `cobalt show`, `cobalt compare`, Markdown and the compare page, which only call these.

    user = SimulatedUser(model="gpt-4o-mini")      # the user side of a scenario's conversation
    lines = transcript_lines(item)                 # `cobalt show`'s transcript of one item (None: not one)

The run loop's part is the engine's, which every run goes through: `run._conversation` (turn by turn),
`results._conversation` (the transcript in an item's result), `evaluators._turns` and `_conversational` (per
turn and per conversation scores). The names load on first use (PEP 562): the evaluators read a conversation's
spec on every import of cobalt, and need not load the LLM client the simulated user speaks through, nor the
renderers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._render import (
        diverged_at,
        divergence_lines,
        divergence_text,
        simulator_text,
        transcript_lines,
        transcript_summary,
        transcript_text,
        turn_score_text,
    )
    from ._simulator import SimulatedUser
    from ._spec import Scenario, Script, ScriptedTurn, conversation_of, is_conversation, read_conversation

#: Where each name lives; `__getattr__` imports its module on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "._render": "diverged_at divergence_lines divergence_text simulator_text transcript_lines transcript_summary "
        "transcript_text turn_score_text",
    "._simulator": "SimulatedUser",
    "._spec": "Scenario Script ScriptedTurn conversation_of is_conversation read_conversation",
}.items() for name in names.split()}

__all__ = [
    "Scenario",
    "Script",
    "ScriptedTurn",
    "SimulatedUser",
    "conversation_of",
    "diverged_at",
    "divergence_lines",
    "divergence_text",
    "is_conversation",
    "read_conversation",
    "simulator_text",
    "transcript_lines",
    "transcript_summary",
    "transcript_text",
    "turn_score_text",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__, globals())
