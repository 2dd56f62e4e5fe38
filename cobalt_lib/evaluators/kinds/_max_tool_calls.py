"""`max_tool_calls`: 1 when the agent made at most `n` tool calls (a guard against runaway agents)."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, verdict
from .._toolcalls import Source, made_calls, source_field


class MaxToolCalls(Deterministic):
    """1 when the agent made at most `n` tool calls (reported in metadata["tool_calls"], or in its trace with
    source="trace"), else 0."""

    kind = "max_tool_calls"

    n: int = Field(ge=0, description="the most tool calls a passing agent run may make")
    source: Source = source_field()

    @property
    def reads_spans(self) -> bool:
        return self.source == "trace"

    def check(self, ctx: EvalContext) -> Evaluation:
        calls = made_calls(ctx, self.source)
        if isinstance(calls, Evaluation):
            return calls
        made = len(calls)
        return verdict(made <= self.n, f"{made} tool call{'s' if made != 1 else ''}, "
                                       f"{'within' if made <= self.n else 'over'} {self.n}")
