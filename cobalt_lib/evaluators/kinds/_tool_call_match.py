"""`tool_call_match`: the tool calls an agent reported against the ones the item expects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..._errors import EvaluatorError
from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic
from .._kind import require_field
from .._toolcalls import ToolCall, arguments_match, read_calls, reported_calls

if TYPE_CHECKING:
    from .._evaluator import Evaluator


class ToolCallMatch(Deterministic):
    """The share of item[`field`]'s expected tool calls that the agent made (metadata["tool_calls"]),
    in order and with the expected arguments contained in the actual ones by default."""

    kind = "tool_call_match"

    field: str = Field("expected_tool_calls", description="the item field listing the expected calls "
                                                          "[{name, arguments?}]")
    order: Literal["in-order", "any", "lcs"] = Field(
        "in-order", description="in-order: matched in sequence; any: in any order; lcs: F1 of the longest "
                                "common subsequence of tool names")
    arguments: Literal["subset", "exact"] = Field(
        "subset", description="subset: the expected arguments are contained in the actual ones; exact: equal")

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_field(item, index, evaluator, self.field)
        try:
            read_calls(item[self.field], f"item field {self.field!r}")
        except ValueError as exc:
            raise EvaluatorError(f"Evaluator {evaluator.name!r}: dataset item {index}: {exc}.") from None

    def check(self, ctx: EvalContext) -> Evaluation:
        expected = read_calls(ctx.item.get(self.field), f"item field {self.field!r}")
        try:
            actual = reported_calls(ctx.metadata)
        except ValueError as exc:
            return Evaluation(status="eval-error", error=f"the agent's {exc}")
        if self.order == "lcs":
            return _lcs(expected, actual)
        if not expected:
            return Evaluation(score=1.0, reason=f"no calls expected ({len(actual)} made)")
        matched, problems = self._match(expected, actual)
        reason = "; ".join(problems) if problems else f"all {len(expected)} expected calls made"
        return Evaluation(score=matched / len(expected), reason=f"{matched}/{len(expected)} matched: {reason}"
                          if problems else reason)

    def _match(self, expected: list[ToolCall], actual: list[ToolCall]) -> tuple[int, list[str]]:
        """How many expected calls were matched, and what went wrong with the others."""
        used: set[int] = set()
        position = 0
        matched, problems = 0, []
        for call in expected:
            start = position if self.order == "in-order" else 0
            hit = next((i for i in range(start, len(actual)) if i not in used and self._same(call, actual[i])), None)
            if hit is not None:
                used.add(hit)
                matched += 1
                position = hit + 1
                continue
            problems.append(_problem(call, actual, used, start, exact=self.arguments == "exact"))
        return matched, problems

    def _same(self, expected: ToolCall, actual: ToolCall) -> bool:
        return expected.name == actual.name and arguments_match(expected.arguments, actual.arguments,
                                                                exact=self.arguments == "exact")


def _problem(call: ToolCall, actual: list[ToolCall], used: set[int], start: int, *, exact: bool) -> str:
    same_name = [a for i, a in enumerate(actual) if a.name == call.name and i not in used]
    later = [a for i, a in enumerate(actual) if a.name == call.name and i not in used and i >= start]
    if not same_name:
        return f"missing {call.show()}"
    if not later and any(arguments_match(call.arguments, a.arguments, exact=exact) for a in same_name):
        return f"{call.show()} out of order"
    return f"{call.show()}: arguments differ, got {(later or same_name)[0].show()}"


def _lcs(expected: list[ToolCall], actual: list[ToolCall]) -> Evaluation:
    """F1 of the longest common subsequence of tool names (as pydantic-evals scores trajectories)."""
    a, b = [c.name for c in expected], [c.name for c in actual]
    if not a and not b:
        return Evaluation(score=1.0, reason="no calls expected and none made")
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    common = table[-1][-1]
    precision = common / len(b) if b else 0.0
    recall = common / len(a) if a else 0.0
    f1 = 2 * precision * recall / (precision + recall) if common else 0.0
    return Evaluation(score=f1, reason=f"longest common sequence {common} of {len(a)} expected and {len(b)} made "
                                       f"(precision {precision:.2f}, recall {recall:.2f}): expected "
                                       f"{' > '.join(a) or 'none'}, made {' > '.join(b) or 'none'}")
