"""`max_model_calls`: 1 when the agent's trace shows at most `n` model calls (a guard against loops)."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from ...traces._genai import model_calls
from .._context import EvalContext
from .._deterministic import Deterministic, verdict
from .._toolcalls import no_trace


class MaxModelCalls(Deterministic):
    """1 when the agent's trace holds at most `n` model calls (spans whose gen_ai.operation.name is chat,
    text_completion or generate_content), else 0."""

    kind = "max_model_calls"

    n: int = Field(ge=0, description="the most model calls a passing agent run may make")

    @property
    def reads_spans(self) -> bool:
        return True

    def check(self, ctx: EvalContext) -> Evaluation:
        if not ctx.spans:
            return Evaluation(status="eval-error", error=no_trace("its model calls"))
        made = len(model_calls(ctx.spans))
        return verdict(made <= self.n, f"{made} model call{'s' if made != 1 else ''}, "
                                       f"{'within' if made <= self.n else 'over'} {self.n}")
