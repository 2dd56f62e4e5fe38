"""`max_tokens`: 1 when the agent call used at most `n` tokens."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, over_budget


class MaxTokens(Deterministic):
    """1 when the item's agent call used at most `n` tokens (as its metadata reports them), else 0."""

    kind = "max_tokens"

    n: int = Field(ge=0, description="the most tokens a passing agent call may use")

    def check(self, ctx: EvalContext) -> Evaluation:
        return over_budget("tokens", ctx.tokens, self.n, "", "report metadata tokens (or usage) from the agent")
