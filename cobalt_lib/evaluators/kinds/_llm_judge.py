"""`llm-judge`: a model scores the output 0..1 from your prompt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from ..._errors import TemplateError
from ...llm._judge import SYSTEM_PROMPT
from ...llm._providers import Endpoint, resolve_judge
from ...results._report import Evaluation
from .._context import EvalContext, Scoring
from .._kind import EvaluatorKind
from .._template import missing_item_variables, render

if TYPE_CHECKING:
    from ...config._config import Config
    from .._evaluator import Evaluator


class LLMJudge(EvaluatorKind):
    """An LLM scores the output 0..1 from `prompt`, answering {"score", "reason"} JSON."""

    kind = "llm-judge"

    prompt: str = Field(description="the judge's instructions, e.g. 'Rate the answer {{output}} to {{input}}...'")
    system: str | None = Field(None, description="the system message (default: cobalt's impartial-judge prompt)")
    model: str | None = Field(None, description="the judge model (default: [judge] model)")
    provider: str | None = Field(None, description="openai, anthropic or openrouter (default: [judge] provider)")
    base_url: str | None = Field(None, exclude=True,
                                 description="an OpenAI-compatible server (default: [judge] base_url)")

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the prompt is empty; write the judge's instructions with {{output}} in them")
        return value

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        missing = missing_item_variables(self.prompt, item)
        if missing:
            field = missing[0].removeprefix("item.")  # {{item.x}} and {{x}} both read the item's field x
            raise TemplateError(
                f"Evaluator {evaluator.name!r} uses {{{{{missing[0]}}}}} but dataset item {index} has no "
                f"field {field!r} (fields: {', '.join(sorted(item)) or 'none'})."
            )

    def endpoint(self, config: Config, evaluator: Evaluator) -> Endpoint:
        return resolve_judge(config.judge, provider=self.provider, model=self.model, base_url=self.base_url,
                             who=f"Evaluator {evaluator.name!r}")

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        assert scoring.judge is not None and scoring.endpoint is not None
        variables = {**ctx.item, "item": ctx.item, "output": ctx.output, "metadata": ctx.metadata,
                     "index": ctx.index, "run_index": ctx.run_index}
        prompt = render(self.prompt, variables, where=f"Evaluator {scoring.evaluator!r}")
        return await scoring.judge.score(scoring.endpoint, prompt, system=self.system or SYSTEM_PROMPT)
