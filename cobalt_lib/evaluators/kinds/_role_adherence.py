"""`role_adherence`: whether the assistant stayed in its assigned role in every answer of a conversation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..._errors import EvaluatorError
from .._context import EvalContext
from .._conversational import PerTurnVerdicts, numbered_transcript
from .._judged import as_prompt_text

if TYPE_CHECKING:
    from .._evaluator import Evaluator

PROMPT = """\
Judge whether an AI assistant stays in its assigned role in every answer of a conversation.

The assistant's role: {role}

The conversation:
{transcript}

For each of the assistant's {count} answers, in order, say whether it stays in the role (its persona, tone, \
scope and rules). Reply with only a JSON object: {{"verdicts": [{{"turn": <turn number>, "adheres": true or \
false, "reason": "<why>"}}, ...]}}, with exactly {count} verdicts, one per assistant answer in order."""


class RoleAdherence(PerTurnVerdicts):
    """The share of the assistant's answers that stay in its role (given as `role`, else the item's `role`
    field), one verdict per turn; 1 judge call per conversation."""

    kind = "role_adherence"
    verdict = "adheres"
    described = "answers stay in the role"

    role: str | None = Field(None, description="the assistant's role (default: the item's 'role' field)")

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        super().check_item(item, index, evaluator)
        if self.role is None and not as_prompt_text(item.get("role")).strip():
            raise EvaluatorError(f"Evaluator {evaluator.name!r} needs the assistant's role: pass role='...', or give "
                                 f"dataset item {index} a 'role' field.")

    def prompt(self, ctx: EvalContext, transcript: list[dict[str, Any]], count: int) -> str:
        role = self.role if self.role is not None else ctx.item.get("role")
        return PROMPT.format(role=as_prompt_text(role), transcript=numbered_transcript(transcript), count=count)
