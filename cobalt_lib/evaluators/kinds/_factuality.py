"""`factuality`: the output against a reference answer, in the categories of OpenAI's factuality eval."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._judged import Calls, Judged, as_prompt_text, json_object, require

if TYPE_CHECKING:
    from .._evaluator import Evaluator

PROMPT = """\
You are comparing a submitted answer to an expert answer on a given question. Here is the data:
[BEGIN DATA]
[Question]: {question}
[Expert]: {expert}
[Submission]: {submission}
[END DATA]

Compare the factual content of the submitted answer with the expert answer. Ignore any differences in style, \
grammar, or punctuation. The submitted answer may either be a subset or superset of the expert answer, or it \
may conflict with it. Determine which case applies, choosing one of these options:
(A) The submitted answer is a subset of the expert answer and is fully consistent with it.
(B) The submitted answer is a superset of the expert answer and is fully consistent with it.
(C) The submitted answer contains all the same details as the expert answer.
(D) There is a disagreement between the submitted answer and the expert answer.
(E) The answers differ, but these differences don't matter from the perspective of factuality.

Reply with only a JSON object: {{"choice": "<A, B, C, D or E>", "reason": "<short reason>"}}"""
SHAPE = '{"choice": "<A, B, C, D or E>", "reason": "<short reason>"}'

#: Each choice's score and name, as OpenAI's eval (and autoevals' Factuality) scores them.
CHOICES = {"A": (0.4, "subset"), "B": (0.6, "superset"), "C": (1.0, "same"), "D": (0.0, "disagrees"),
           "E": (1.0, "different but equivalent")}


def parse_choice(text: str) -> tuple[str, str] | str:
    obj = json_object(text, "choice")
    if obj is None:
        return "no JSON object with a 'choice' field was found"
    choice = str(obj["choice"]).strip().strip("()").upper()
    if choice not in CHOICES:
        return f"the choice {obj['choice']!r} is not one of A, B, C, D, E"
    return choice, str(obj.get("reason") or "")


class Factuality(Judged):
    """The output against item[`field`] as OpenAI's factuality eval grades it: subset 0.4, superset 0.6, same
    1, disagrees 0, different but equivalent 1 (1 judge call per item)."""

    kind = "factuality"

    field: str = Field("expected_output", description="the item field holding the reference answer")

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require(item, index, evaluator, self.field, "the reference answer")

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        prompt = PROMPT.format(question=as_prompt_text(ctx.input), expert=as_prompt_text(ctx.item.get(self.field)),
                               submission=as_prompt_text(ctx.output))
        choice, why = await calls.ask("choice", prompt, parse_choice, SHAPE)
        score, name = CHOICES[choice]
        return calls.result(score=score, reason=f"({choice}) {name}" + (f": {why}" if why else ""))
