"""`knowledge_retention`: whether the assistant remembers what the user said earlier in a conversation."""

from __future__ import annotations

from typing import Any

from .._context import EvalContext
from .._conversational import PerTurnVerdicts, numbered_transcript

PROMPT = """\
Judge whether an AI assistant remembers what the user told it earlier in a conversation.

The conversation:
{transcript}

For each of the assistant's {count} answers, in order, say whether it forgets or contradicts something the user \
said in an earlier turn (for instance, asks again for information the user already gave). Reply with only a JSON \
object: {{"verdicts": [{{"turn": <turn number>, "forgets": true or false, "reason": "<why>"}}, ...]}}, with exactly \
{count} verdicts, one per assistant answer in order."""


class KnowledgeRetention(PerTurnVerdicts):
    """The share of the assistant's answers that forget nothing the user said in earlier turns, one verdict
    per turn; 1 judge call per conversation."""

    kind = "knowledge_retention"
    verdict = "forgets"
    good_when = False
    described = "answers retain what the user said"

    def prompt(self, ctx: EvalContext, transcript: list[dict[str, Any]], count: int) -> str:
        return PROMPT.format(transcript=numbered_transcript(transcript), count=count)
