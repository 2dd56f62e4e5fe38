"""What the conversation tests share: the loopback server playing the simulated user (and the judge), a
scenario, and two versions of an agent that answer alike on turn 1 only."""

from __future__ import annotations

import json
import re
from typing import Any

from fakellm import FakeLLM, Reply, text

from cobalt_lib import ConversationContext

USER_PROMPT = "You are role-playing a user"
#: What the simulated user says after k assistant answers; after the last it ends the conversation.
USER_LINES = ["I was charged twice for order 1234.", "Yes, card ending 42.", "Thanks, that is all."]


def assistant_answers(prompt: str) -> int:
    return len(re.findall(r"^assistant: ", prompt, flags=re.MULTILINE))


def route(llm: FakeLLM, judge: dict[str, Any] | None = None, *, end_after: int = 99) -> None:
    """The simulated user's turns by how many answers its prompt holds (it ends after `end_after`), and the
    judge's answers by a marker of their prompt."""

    def respond(kind: str, body: dict[str, Any]) -> Reply:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if USER_PROMPT in prompt:
            k = assistant_answers(prompt)
            done = k >= min(end_after, len(USER_LINES))
            return text(json.dumps({"message": "" if done else USER_LINES[k], "done": done}))
        for marker, value in (judge or {}).items():
            if marker in prompt:
                return text(json.dumps(value))
        return text("no route for this prompt")

    llm.respond = respond


def simulator_calls(llm: FakeLLM) -> int:
    return sum(1 for r in llm.requests if r["kind"] == "chat"
               and any(USER_PROMPT in str(m.get("content")) for m in r["body"]["messages"]))


SCENARIO = {"id": "double-charge", "conversation": {
    "goal": "get the double charge on order 1234 refunded", "persona": "a hurried customer", "max_turns": 3}}


def agent_v1(ctx: ConversationContext) -> str:
    return f"Answer {ctx.turn}: noted."


def agent_v2(ctx: ConversationContext) -> str:
    return f"Answer {ctx.turn}: noted." if ctx.turn == 1 else f"Answer {ctx.turn}: refunded!"
