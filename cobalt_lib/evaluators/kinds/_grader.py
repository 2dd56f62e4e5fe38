"""`grader`: a grader deck scores the output -3..3 with notes; `score` is (raw + 3) / 6."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from ...grading.graders._deck import Grader
from ...grading.graders._files import load_grader
from ...grading.graders._prompt import STRICT_RETRY, SYSTEM, normalised, parse_grade
from ...llm._providers import Endpoint, resolve_judge
from ...results._report import Evaluation
from .._context import EvalContext, Scoring
from .._kind import EvaluatorKind

if TYPE_CHECKING:
    from ...config._config import Config
    from .._evaluator import Evaluator


class GraderKind(EvaluatorKind):
    """A grader deck scores the output -3..3 with notes; score is (raw + 3) / 6, raw 1 or more passes.

    The user message is the item's `input`, the assistant response the output, and the item's
    `expected_output` is shown when present. An answer that is not an integer within -3..3 is retried
    once with a stricter instruction, then recorded as an eval-error.
    """

    kind = "grader"
    #: Raw 1 or more passes: (1 + 3) / 6.
    default_threshold = 4 / 6

    grader: Grader = Field(description="a grader(...) deck, or the path of a grader file (relative to the project)")
    model: str | None = Field(None, description="the judge model (default: [judge] model)")
    provider: str | None = Field(None, description="openai, anthropic or openrouter (default: [judge] provider)")
    base_url: str | None = Field(None, exclude=True,
                                 description="an OpenAI-compatible server (default: [judge] base_url)")

    @field_validator("grader", mode="before")
    @classmethod
    def _load(cls, value: Any) -> Any:
        if isinstance(value, str | Path):
            import os

            from ...config._config import find_project_root

            # Dagster's code server may run elsewhere: it names the project in COBALT_PROJECT_DIR.
            start = os.environ.get("COBALT_PROJECT_DIR")
            return load_grader(value, find_project_root(Path(start) if start else None)[0])
        if not isinstance(value, Grader):
            raise ValueError("pass a grader(...) deck or the path of a grader file")
        return value

    def describe(self) -> dict[str, Any]:
        g = self.grader
        return {"grader": g.name, "grader_hash": g.hash, "grader_source": g.source, "model": self.model,
                "provider": self.provider}

    def endpoint(self, config: Config, evaluator: Evaluator) -> Endpoint:
        return resolve_judge(config.judge, provider=self.provider, model=self.model, base_url=self.base_url,
                             who=f"Evaluator {evaluator.name!r}")

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        assert scoring.judge is not None and scoring.endpoint is not None
        prompt = self.grader.render(ctx.input, ctx.output, ctx.expected_output)
        # The iteration is part of the cache key: repeated runs of one output are real repeated calls.
        answer = await scoring.judge.ask(scoring.endpoint, prompt, parse_grade, system=SYSTEM, retry=STRICT_RETRY,
                                         salt={"grader": self.grader.hash, "iteration": ctx.run_index},
                                         purpose="grader")
        if answer.value is None:
            return answer.evaluation
        raw, notes = answer.value
        return answer.evaluation.model_copy(update={"score": normalised(raw), "raw_score": float(raw),
                                                    "reason": notes or None})
