"""`turn_relevancy`: whether each answer of the assistant is relevant to the conversation at that point."""

from __future__ import annotations

from typing import Any

from .._context import EvalContext
from .._conversational import PerTurnVerdicts, numbered_transcript

PROMPT = """\
Judge whether each answer of an AI assistant is relevant to the conversation at the point it was given.

The conversation:
{transcript}

For each of the assistant's {count} answers, in order, say whether it is relevant: it addresses the user's last \
message in the light of the turns before it. Reply with only a JSON object: {{"verdicts": [{{"turn": <turn \
number>, "relevant": true or false, "reason": "<why>"}}, ...]}}, with exactly {count} verdicts, one per assistant \
answer in order."""


class TurnRelevancy(PerTurnVerdicts):
    """The share of the assistant's answers that are relevant to the conversation so far, one verdict per
    turn; 1 judge call per conversation."""

    kind = "turn_relevancy"
    verdict = "relevant"
    described = "answers are relevant"

    def prompt(self, ctx: EvalContext, transcript: list[dict[str, Any]], count: int) -> str:
        return PROMPT.format(transcript=numbered_transcript(transcript), count=count)
