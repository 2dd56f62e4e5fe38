"""`max_tool_calls`: 1 when the agent made at most `n` tool calls (a guard against runaway agents)."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, verdict
from .._toolcalls import reported_calls


class MaxToolCalls(Deterministic):
    """1 when the agent reported at most `n` tool calls in metadata["tool_calls"], else 0."""

    kind = "max_tool_calls"

    n: int = Field(ge=0, description="the most tool calls a passing agent run may make")

    def check(self, ctx: EvalContext) -> Evaluation:
        try:
            made = len(reported_calls(ctx.metadata))
        except ValueError as exc:
            return Evaluation(status="eval-error", error=f"the agent's {exc}")
        return verdict(made <= self.n, f"{made} tool call{'s' if made != 1 else ''}, "
                                       f"{'within' if made <= self.n else 'over'} {self.n}")
