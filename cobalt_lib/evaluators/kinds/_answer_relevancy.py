"""`answer_relevancy`: the share of the output's statements that address the input."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...results._report import Evaluation
from .._context import EvalContext
from .._judged import Calls, Judged, as_prompt_text, flag, listing, read_list, require, truthy

if TYPE_CHECKING:
    from .._evaluator import Evaluator

PROMPT = """\
Judge how relevant an answer is to the question. Break the answer into its statements and decide for each \
whether it helps answer the question (true) or is off-topic, padding or an evasion such as "I cannot help \
with that" (false).

Question: {question}

Answer: {answer}

Reply with only a JSON object: {{"statements": [{{"statement": "<statement>", "relevant": true}}, ...]}} \
(an empty list when the answer says nothing)."""
SHAPE = '{"statements": [{"statement": "<statement>", "relevant": true or false}, ...]}'


class AnswerRelevancy(Judged):
    """The share of the output's statements that address the item's `input` (1 judge call per item; the
    reason names the irrelevant statements)."""

    kind = "answer_relevancy"

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require(item, index, evaluator, "input", "the question the answer must address")

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        prompt = PROMPT.format(question=as_prompt_text(ctx.input), answer=as_prompt_text(ctx.output))
        statements = await calls.ask("statements", prompt,
                                     lambda text: read_list(text, "statements", lambda e: flag(e, "relevant")), SHAPE)
        if not statements:
            return calls.result(score=0.0, reason="the output makes no statement")
        irrelevant = [str(s.get("statement", "")) for s in statements if not truthy(s, "relevant")]
        relevant = len(statements) - len(irrelevant)
        reason = f"{relevant}/{len(statements)} statements address the input"
        if irrelevant:
            reason += f"; irrelevant: {listing(irrelevant)}"
        return calls.result(score=relevant / len(statements), reason=reason)
