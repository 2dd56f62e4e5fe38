"""Multi-turn conversations: items that are scripted or simulated conversations, the simulated user, transcripts."""

from ._simulator import SimulatedUser
from ._spec import Scenario, Script, ScriptedTurn, conversation_of, is_conversation, read_conversation

__all__ = ["Scenario", "Script", "ScriptedTurn", "SimulatedUser", "conversation_of", "is_conversation",
           "read_conversation"]
