"""`max_cost`: 1 when the agent call cost at most `usd` dollars."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, over_budget


class MaxCost(Deterministic):
    """1 when the item's agent call cost at most `usd` US dollars (its metadata's cost, or its model's
    price times its tokens), else 0."""

    kind = "max_cost"

    usd: float = Field(ge=0, description="the dearest passing agent call, in US dollars")

    def check(self, ctx: EvalContext) -> Evaluation:
        return over_budget("cost", ctx.cost_usd, self.usd, " USD",
                           "report metadata cost_usd, or model with input_tokens and output_tokens")
