"""`goal_completion`: whether the user of a conversation reached their goal with the assistant's help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..._errors import EvaluatorError
from ...conversations._spec import Scenario, conversation_of
from ...llm._judge import parse_judgement
from ...results._report import Evaluation
from .._context import EvalContext
from .._conversational import Conversational, numbered_transcript
from .._judged import Calls, as_prompt_text

if TYPE_CHECKING:
    from .._evaluator import Evaluator

PROMPT = """\
Judge whether the user of a conversation with an AI assistant reached their goal, with the assistant's help.

The user's goal: {goal}

The conversation:
{transcript}

Score 1.0 when the assistant fully helped the user reach the goal, 0.0 when it did not help at all, and in \
between for partial progress. Reply with only a JSON object: {{"score": <number from 0.0 to 1.0>, "reason": \
"<what the user got and what not>"}}"""
SHAPE = '{"score": <number from 0.0 to 1.0>, "reason": "<short reason>"}'


def goal_of(item: Mapping[str, Any]) -> Any:
    """The simulated user's goal, else the item's `goal` field."""
    conversation = conversation_of(item)
    return conversation.goal if isinstance(conversation, Scenario) else item.get("goal")


class GoalCompletion(Conversational):
    """How far the user of a conversation reached their goal (given as `goal`, else the simulated user's
    goal or the item's `goal` field), judged from the transcript; 1 judge call per conversation."""

    kind = "goal_completion"

    goal: str | None = Field(None, description="the user's goal (default: the simulated user's, else the item's "
                                               "'goal' field)")

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        super().check_item(item, index, evaluator)
        if self.goal is None and not as_prompt_text(goal_of(item)).strip():
            raise EvaluatorError(f"Evaluator {evaluator.name!r} needs the user's goal: pass goal='...', or give "
                                 f"dataset item {index} a 'goal' field (a simulated user's scenario has one).")

    async def judge_conversation(self, ctx: EvalContext, transcript: list[dict[str, Any]], calls: Calls) -> Evaluation:
        goal = self.goal if self.goal is not None else goal_of(ctx.item)
        prompt = PROMPT.format(goal=as_prompt_text(goal), transcript=numbered_transcript(transcript))
        score, reason = await calls.ask("goal", prompt, parse_judgement, SHAPE)
        return calls.result(score=score, reason=reason)
