"""`faithfulness`: the share of the output's claims that the item's contexts support (RAGAS style)."""

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
    text_entry,
    truthy,
)

if TYPE_CHECKING:
    from .._evaluator import Evaluator

CLAIMS_PROMPT = """\
Break the answer below into the factual claims it makes: short statements, each understandable on its own \
(replace pronouns with what they refer to). Leave out opinions, greetings and questions.

Question: {question}

Answer: {answer}

Reply with only a JSON object: {{"claims": ["<claim>", ...]}} (an empty list when the answer makes no factual \
claim)."""
CLAIMS_SHAPE = '{"claims": ["<claim>", ...]}'

VERDICTS_PROMPT = """\
Decide for each claim whether the context supports it: true only when the context states it or it follows \
directly from the context; false when the context contradicts it or does not say it.

Context:
{contexts}

Claims:
{claims}

Reply with only a JSON object with one verdict per claim, in order: \
{{"verdicts": [{{"supported": true, "reason": "<short reason>"}}, ...]}}"""
VERDICTS_SHAPE = '{"verdicts": [{"supported": true or false, "reason": "<short reason>"}, ...]} (one per claim)'


class Faithfulness(Judged):
    """The share of the output's claims supported by the item's `contexts`: claims extracted, then each
    checked against the contexts (2 judge calls per item; the reason names the unsupported claims)."""

    kind = "faithfulness"

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_contexts(item, index, evaluator)

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        claims: list[str] = await calls.ask(
            "claims", CLAIMS_PROMPT.format(question=as_prompt_text(ctx.input), answer=as_prompt_text(ctx.output)),
            lambda text: read_list(text, "claims", text_entry), CLAIMS_SHAPE)
        if not claims:
            return calls.result(score=1.0, reason="the output makes no factual claim, so none is unsupported")
        prompt = VERDICTS_PROMPT.format(contexts=numbered(contexts_of(ctx.item)),
                                        claims="\n".join(f"{i}. {c}" for i, c in enumerate(claims, start=1)))
        verdicts = await calls.ask("verdicts", prompt,
                                   lambda text: read_list(text, "verdicts", lambda e: flag(e, "supported"),
                                                          len(claims)), VERDICTS_SHAPE)
        unsupported = [c for c, v in zip(claims, verdicts, strict=True) if not truthy(v, "supported")]
        supported = len(claims) - len(unsupported)
        reason = f"{supported}/{len(claims)} claims supported by the contexts"
        if unsupported:
            reason += f"; unsupported: {listing(unsupported)}"
        return calls.result(score=supported / len(claims), reason=reason)
