"""`max_latency`: 1 when the agent call took at most `ms` milliseconds."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, over_budget


class MaxLatency(Deterministic):
    """1 when the item's agent call took at most `ms` milliseconds, else 0."""

    kind = "max_latency"

    ms: float = Field(gt=0, description="the slowest passing agent call, in milliseconds")

    def check(self, ctx: EvalContext) -> Evaluation:
        return over_budget("latency", ctx.latency_ms, self.ms, " ms", "the agent call was not timed")
