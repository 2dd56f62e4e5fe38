"""`exact-match`: 1 when the output equals an item field, else 0."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext, Scoring
from .._kind import EvaluatorKind, require_field

if TYPE_CHECKING:
    from .._evaluator import Evaluator


class ExactMatch(EvaluatorKind):
    """1 when the output equals item[`field`] (text compared as written, or normalised), else 0."""

    kind = "exact-match"

    field: str = Field("expected_output", description="the item field holding the expected output")
    ignore_case: bool = Field(False, description="compare case-insensitively (Unicode casefold)")
    ignore_whitespace: bool = Field(False, description="collapse runs of whitespace and strip both ends")

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_field(item, index, evaluator, self.field)

    def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        expected, actual = self._normalise(ctx.item.get(self.field)), self._normalise(ctx.output)
        matched = expected == actual
        reason = "exact match" if matched else f"expected {expected[:80]!r}, got {actual[:80]!r}"
        return Evaluation(score=1.0 if matched else 0.0, reason=reason)

    def _normalise(self, value: Any) -> str:
        text = value if isinstance(value, str) else "" if value is None else str(value)
        if self.ignore_whitespace:
            text = re.sub(r"\s+", " ", text).strip()
        return text.casefold() if self.ignore_case else text
