"""`tool_call_match`: the tool calls an agent reported against the ones the item expects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..._errors import EvaluatorError
from ..._numbers import fixed
from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic
from .._kind import require_field
from .._toolcalls import Source, ToolCall, arguments_match, made_calls, read_calls, source_field

if TYPE_CHECKING:
    from .._evaluator import Evaluator


class ToolCallMatch(Deterministic):
    """The share of item[`field`]'s expected tool calls that the agent made (metadata["tool_calls"], or its
    trace with source="trace"), in order and with the expected arguments contained in the actual ones by default."""

    kind = "tool_call_match"

    field: str = Field("expected_tool_calls", description="the item field listing the expected calls "
                                                          "[{name, arguments?}]")
    order: Literal["in-order", "any", "lcs"] = Field(
        "in-order", description="in-order: the most expected calls made in their order (longest common "
                                "subsequence); any: in any order; lcs: F1 of the longest common subsequence of tool "
                                "names")
    arguments: Literal["subset", "exact"] = Field(
        "subset", description="subset: the expected arguments are contained in the actual ones; exact: equal")
    source: Source = source_field()

    @property
    def reads_spans(self) -> bool:
        return self.source == "trace"

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_field(item, index, evaluator, self.field)
        try:
            read_calls(item[self.field], f"item field {self.field!r}")
        except ValueError as exc:
            raise EvaluatorError(f"Evaluator {evaluator.name!r}: dataset item {index}: {exc}.") from None

    def check(self, ctx: EvalContext) -> Evaluation:
        expected = read_calls(ctx.item.get(self.field), f"item field {self.field!r}")
        actual = made_calls(ctx, self.source)
        if isinstance(actual, Evaluation):
            return actual
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
        pairs = self._in_order(expected, actual) if self.order == "in-order" else self._any_order(expected, actual)
        used = set(pairs.values())
        problems = [_problem(call, actual, used, _window(pairs, k, len(actual)), exact=self.arguments == "exact")
                    for k, call in enumerate(expected) if k not in pairs]
        return len(pairs), problems

    def _in_order(self, expected: list[ToolCall], actual: list[ToolCall]) -> dict[int, int]:
        """The longest common subsequence of expected and actual calls (a call matches by name and
        arguments), as expected index -> actual index; on ties the earlier expected calls are kept."""
        table = [[0] * (len(actual) + 1) for _ in range(len(expected) + 1)]
        for i, call in enumerate(expected):
            for j, made in enumerate(actual):
                table[i + 1][j + 1] = (table[i][j] + 1 if self._same(call, made)
                                       else max(table[i][j + 1], table[i + 1][j]))
        pairs: dict[int, int] = {}
        i, j = len(expected), len(actual)
        while i and j:
            if self._same(expected[i - 1], actual[j - 1]) and table[i][j] == table[i - 1][j - 1] + 1:
                pairs[i - 1] = j - 1
                i, j = i - 1, j - 1
            elif table[i - 1][j] >= table[i][j - 1]:
                i -= 1
            else:
                j -= 1
        return pairs

    def _any_order(self, expected: list[ToolCall], actual: list[ToolCall]) -> dict[int, int]:
        """A largest matching of expected to actual calls in any order (augmenting paths)."""
        owner: dict[int, int] = {}  # actual index -> expected index

        def place(k: int, seen: set[int]) -> bool:
            for j, made in enumerate(actual):
                if j not in seen and self._same(expected[k], made):
                    seen.add(j)
                    if j not in owner or place(owner[j], seen):
                        owner[j] = k
                        return True
            return False

        for k in range(len(expected)):
            place(k, set())
        return {k: j for j, k in owner.items()}

    def _same(self, expected: ToolCall, actual: ToolCall) -> bool:
        return expected.name == actual.name and arguments_match(expected.arguments, actual.arguments,
                                                                exact=self.arguments == "exact")


def _window(pairs: dict[int, int], k: int, size: int) -> range:
    """The actual calls an unmatched expected call `k` could have taken in order: between its matched
    neighbours' calls."""
    before = max((j for e, j in pairs.items() if e < k), default=-1)
    after = min((j for e, j in pairs.items() if e > k), default=size)
    return range(before + 1, after)


def _problem(call: ToolCall, actual: list[ToolCall], used: set[int], window: range, *, exact: bool) -> str:
    same_name = [a for i, a in enumerate(actual) if a.name == call.name and i not in used]
    in_place = [a for i, a in enumerate(actual) if a.name == call.name and i not in used and i in window]
    if not same_name:
        return f"missing {call.show()}"
    if not in_place and any(arguments_match(call.arguments, a.arguments, exact=exact) for a in same_name):
        return f"{call.show()} out of order"
    return f"{call.show()}: arguments differ, got {(in_place or same_name)[0].show()}"


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
                                       f"(precision {fixed(precision, 2)}, recall {fixed(recall, 2)}): expected "
                                       f"{' > '.join(a) or 'none'}, made {' > '.join(b) or 'none'}")
