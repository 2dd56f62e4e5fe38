"""`context_recall`: the share of the expected answer that the item's contexts can back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...results._report import Evaluation
from .._context import EvalContext
from .._judged import (
    Calls,
    Judged,
    as_prompt_text,
    contexts_of,
    flag,
    listing,
    numbered,
    read_list,
    require,
    require_contexts,
    truthy,
)

if TYPE_CHECKING:
    from .._evaluator import Evaluator

PROMPT = """\
Break the reference answer into its statements and decide for each whether the contexts contain the \
information needed to state it (true) or not (false).

Question: {question}

Contexts:
{contexts}

Reference answer: {answer}

Reply with only a JSON object: {{"statements": [{{"statement": "<statement>", "attributed": true}}, ...]}}"""
SHAPE = '{"statements": [{"statement": "<statement>", "attributed": true or false}, ...]}'


class ContextRecall(Judged):
    """The share of the item's `expected_output` statements found in its `contexts` (1 judge call per item;
    the reason names what the contexts miss)."""

    kind = "context_recall"

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_contexts(item, index, evaluator)
        require(item, index, evaluator, "expected_output", "the reference answer the contexts should back")

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        prompt = PROMPT.format(question=as_prompt_text(ctx.input), contexts=numbered(contexts_of(ctx.item)),
                               answer=as_prompt_text(ctx.expected_output))
        statements = await calls.ask("statements", prompt,
                                     lambda text: read_list(text, "statements", lambda e: flag(e, "attributed")),
                                     SHAPE)
        if not statements:
            return calls.result(score=1.0, reason="the expected output makes no statement")
        missing = [str(s.get("statement", "")) for s in statements if not truthy(s, "attributed")]
        found = len(statements) - len(missing)
        reason = f"{found}/{len(statements)} statements of the expected output found in the contexts"
        if missing:
            reason += f"; missing from the contexts: {listing(missing)}"
        return calls.result(score=found / len(statements), reason=reason)
