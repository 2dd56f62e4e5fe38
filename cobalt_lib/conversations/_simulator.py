"""The simulated user: a model that plays the user of a `Scenario`, one turn at a time.

Every turn goes through `Judge.ask`, so it is cached like a judge answer, keyed by the scenario and
the conversation so far (the prompt holds both) and the model: re-running an unchanged agent asks the
model nothing and replays the same conversation; a changed agent's first different answer makes a new
prompt, so the conversation diverges from there and only from there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..llm._judge import json_objects
from ..llm._providers import Endpoint, resolve_judge
from ..results._report import Evaluation
from ._spec import Scenario

if TYPE_CHECKING:
    from ..config._config import Config
    from ..llm._judge import Judge

SYSTEM_PROMPT = ("You play the user of an AI assistant, to test the assistant. Stay in character, write only what "
                 "this user would type, and reply with only the JSON object asked for, with no other text.")
PROMPT = """\
You are role-playing a user talking with an AI assistant.

Scenario: {scenario}
Your persona: {persona}
Your goal: {goal}
End the conversation when: {stop}

The conversation so far:
{transcript}

Write the user's next message, in character and in the user's own words. If the goal is reached or the end \
condition is met, end the conversation instead. Reply with only a JSON object: {{"message": "<the user's next \
message, empty when ending>", "done": <true to end the conversation, else false>}}"""
SHAPE = '{"message": "<the next message>", "done": false}'
RETRY_PROMPT = ("Your previous answer could not be used: {problem}. Reply again with only a JSON object of the form "
                '{{"message": "<the next message>", "done": false}} and no other text.')
DEFAULT_STOP = "your goal is reached, or the assistant clearly cannot help you further"
#: What the cache key's purpose says: a simulated user's turn, not a judgement.
PURPOSE = "simulated-user"


@dataclass(frozen=True)
class SimulatedUser:
    """Which model plays the simulated users of an experiment: `experiment(..., simulator=SimulatedUser(...))`.

    Every field defaults to the judge's (`[judge]` in config), as an `llm-judge` evaluator's do."""

    model: str | None = None
    provider: str | None = None
    base_url: str | None = None

    def endpoint(self, config: Config) -> Endpoint:
        return resolve_judge(config.judge, provider=self.provider, model=self.model, base_url=self.base_url,
                             who="The simulated user")


@dataclass(frozen=True)
class UserTurn:
    """The simulated user's next message, or `done` (it ended the conversation), and what asking cost."""

    message: str | None
    done: bool
    evaluation: Evaluation


def render_transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """`user: ...` / `assistant: ...` lines; a first turn says the user opens the conversation."""
    if not messages:
        return "(nothing yet: write the user's opening message)"
    return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in messages)


def prompt_for(scenario: Scenario, messages: Sequence[Mapping[str, Any]]) -> str:
    return PROMPT.format(scenario=scenario.scenario or "(none given)", persona=scenario.persona or "(none given)",
                         goal=scenario.goal, stop=scenario.stop or DEFAULT_STOP,
                         transcript=render_transcript(messages))


def parse_turn(text: str) -> tuple[str | None, bool] | str:
    """`(message, done)` from the model's answer, or what is wrong with it (for the stricter retry)."""
    for obj in json_objects(text):
        if "message" not in obj and "done" not in obj:
            continue
        done = obj.get("done", False)
        if done not in (True, False):
            return f"'done' must be true or false, got {done!r}"
        message = obj.get("message")
        if done:
            return (message if isinstance(message, str) and message.strip() else None), True
        if not isinstance(message, str) or not message.strip():
            return "'message' must be the user's next message (a non-empty string) when 'done' is false"
        return message, False
    return "no JSON object with a 'message' field was found"


async def next_turn(judge: Judge, endpoint: Endpoint, scenario: Scenario,
                    messages: Sequence[Mapping[str, Any]]) -> UserTurn:
    """Ask the simulated user for its next message (from the cache when this conversation was seen)."""
    answer = await judge.ask(endpoint, prompt_for(scenario, messages), parse_turn, system=SYSTEM_PROMPT,
                             retry=RETRY_PROMPT, purpose=PURPOSE)
    if answer.value is None:
        return UserTurn(None, False, answer.evaluation)
    message, done = answer.value
    return UserTurn(message, done, answer.evaluation)
