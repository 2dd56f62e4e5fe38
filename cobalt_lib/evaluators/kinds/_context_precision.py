"""`context_precision`: whether the useful contexts are ranked first (RAGAS average precision)."""

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
    require_contexts,
    truthy,
)

if TYPE_CHECKING:
    from .._evaluator import Evaluator

PROMPT = """\
Decide for each retrieved context passage, in order, whether it was useful to arrive at the reference answer \
to the question (true) or not (false).

Question: {question}

Reference answer: {answer}

Contexts:
{contexts}

Reply with only a JSON object with one verdict per context, in order: \
{{"verdicts": [{{"useful": true, "reason": "<short reason>"}}, ...]}}"""
SHAPE = '{"verdicts": [{"useful": true or false, "reason": "<short reason>"}, ...]} (one per context)'


class ContextPrecision(Judged):
    """Average precision of the item's `contexts` as ranked: each judged useful or not for reaching the
    `expected_output` (the output when the item has none); 1 judge call per item."""

    kind = "context_precision"

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_contexts(item, index, evaluator)

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        contexts = contexts_of(ctx.item)
        if not contexts:
            return calls.result(score=0.0, reason="the item has no contexts")
        reference = ctx.expected_output if ctx.expected_output is not None else ctx.output
        prompt = PROMPT.format(question=as_prompt_text(ctx.input), answer=as_prompt_text(reference),
                               contexts=numbered(contexts))
        verdicts = await calls.ask("verdicts", prompt,
                                   lambda text: read_list(text, "verdicts", lambda e: flag(e, "useful"),
                                                          len(contexts)), SHAPE)
        useful = [truthy(v, "useful") for v in verdicts]
        score = average_precision(useful)
        ranks = [str(i) for i, u in enumerate(useful, start=1) if u]
        reason = (f"{len(ranks)}/{len(useful)} contexts useful (ranks {', '.join(ranks)})" if ranks
                  else f"none of the {len(useful)} contexts is useful")
        noise = [c for c, u in zip(contexts, useful, strict=True) if not u]
        if noise and ranks:
            reason += f"; not useful: {listing(noise, 2)}"
        return calls.result(score=score, reason=reason)


def average_precision(useful: list[bool]) -> float:
    """Mean of precision@k over the ranks k holding a useful context (0 when none is)."""
    hits, total = 0, 0.0
    for k, relevant in enumerate(useful, start=1):
        if relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0
