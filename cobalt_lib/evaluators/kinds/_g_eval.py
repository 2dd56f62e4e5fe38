"""`g_eval`: criteria turned into evaluation steps, then a 1-5 score by those steps (G-Eval)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field, PrivateAttr, field_validator

from ...llm._judge import Answer
from ...results._report import Evaluation
from .._context import EvalContext
from .._judged import (
    SYSTEM,
    Calls,
    Judged,
    Unusable,
    as_prompt_text,
    contexts_of,
    json_object,
    read_list,
    retry_prompt,
    text_entry,
)

STEPS_PROMPT = """\
You will be given the criteria for evaluating an AI system's output. Write 3 to 6 concise evaluation steps a \
careful grader would follow to apply them.

Criteria: {criteria}

Reply with only a JSON object: {{"steps": ["<step>", ...]}}"""
STEPS_SHAPE = '{"steps": ["<step>", ...]}'

SCORE_PROMPT = """\
Evaluate the output against the criteria by following the evaluation steps, then give a score from 1 (does not \
meet the criteria at all) to 5 (fully meets them).

Criteria: {criteria}

Evaluation steps:
{steps}

{data}

Reply with only a JSON object: {{"score": <integer 1 to 5>, "reason": "<short reason>"}}"""
SCORE_SHAPE = '{"score": <integer 1 to 5>, "reason": "<short reason>"}'


def parse_score(text: str) -> tuple[int, str] | str:
    obj = json_object(text, "score")
    if obj is None:
        return "no JSON object with a 'score' field was found"
    score = obj["score"]
    if isinstance(score, str) and score.strip().isdigit():
        score = int(score.strip())
    if isinstance(score, bool) or not isinstance(score, int | float) or score != int(score) or not 1 <= score <= 5:
        return f"the score {obj['score']!r} is not an integer from 1 to 5"
    return int(score), str(obj.get("reason") or "")


class GEval(Judged):
    """A 1-5 score by evaluation steps (given, or written once per run from `criteria`), normalised to 0..1:
    (score - 1) / 4. 1 judge call per item, plus 1 per run for the steps when not given."""

    kind = "g_eval"

    criteria: str = Field(description="what a good output does, e.g. 'The answer is concise and polite.'")
    steps: list[str] | None = Field(None, description="the evaluation steps (default: written by the judge)")
    _pending: dict[Any, asyncio.Future[Answer[list[str]]]] = PrivateAttr(default_factory=dict)

    @field_validator("criteria")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the criteria are empty; say what a good output does")
        return value

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        steps = self.steps or await self._steps(calls)
        data = [f"Input: {as_prompt_text(ctx.input)}"]
        if contexts_of(ctx.item):
            data.append("Contexts:\n" + "\n".join(contexts_of(ctx.item)))
        if ctx.expected_output is not None:
            data.append(f"Expected output: {as_prompt_text(ctx.expected_output)}")
        data.append(f"Output: {as_prompt_text(ctx.output)}")
        prompt = SCORE_PROMPT.format(criteria=self.criteria, data="\n\n".join(data),
                                     steps="\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1)))
        score, why = await calls.ask("score", prompt, parse_score, SCORE_SHAPE)
        return calls.result(score=(score - 1) / 4, raw_score=float(score), reason=f"{score}/5" + (f": {why}" if why
                                                                                                 else ""))

    async def _steps(self, calls: Calls) -> list[str]:
        """The steps from the criteria, asked once per run and endpoint: the first item to need them asks
        (and is charged for it), the items scored meanwhile wait for that answer."""
        key = (id(asyncio.get_running_loop()), calls.endpoint.label)
        pending = self._pending.get(key)
        if pending is None or (pending.done() and not pending.cancelled() and pending.result().value is None):
            pending = self._pending[key] = asyncio.get_running_loop().create_future()
            try:
                answer = await calls.judge.ask(calls.endpoint, STEPS_PROMPT.format(criteria=self.criteria),
                                               lambda text: read_list(text, "steps", text_entry), system=SYSTEM,
                                               retry=retry_prompt(STEPS_SHAPE), purpose="g_eval:steps")
            except BaseException as exc:
                pending.set_exception(exc)
                raise
            pending.set_result(answer)
            calls.add(answer.evaluation)
        answer = await pending
        if answer.value is None:
            raise Unusable(calls.result(status="eval-error", error=f"steps: {answer.evaluation.error}",
                                        raw_response=answer.evaluation.raw_response))
        return list(answer.value)
