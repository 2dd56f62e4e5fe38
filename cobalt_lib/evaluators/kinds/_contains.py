"""`contains`: 1 when the output contains a text (or any, or all, of several texts)."""

from __future__ import annotations

import json
from typing import Any, Self

from pydantic import Field, model_validator

from ...results._report import Evaluation
from .._context import EvalContext, Scoring
from .._kind import EvaluatorKind


class Contains(EvaluatorKind):
    """1 when the output contains `value` (or any of `values`; all of them with `all=True`), else 0."""

    kind = "contains"

    value: str | None = Field(None, description="the text the output must contain")
    values: list[str] | None = Field(None, description="several texts: any of them passes (all of them with all)")
    all: bool = Field(False, description="with values: every one of them must appear")
    ignore_case: bool = Field(False, description="compare case-insensitively (Unicode casefold)")
    negate: bool = Field(False, description="invert: 1 when the output does not contain them")

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.value is None) == (self.values is None):
            raise ValueError("give value='...' or values=[...], exactly one of them")
        if self.values is not None and not self.values:
            raise ValueError("values=[] is empty; list at least one text")
        if self.all and self.values is None:
            raise ValueError("all=True applies to values=[...]; with one value, drop it")
        return self

    def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        wanted = [self.value] if self.value is not None else list(self.values or [])
        text = self._fold(ctx.output if isinstance(ctx.output, str) else json.dumps(ctx.output, default=str))
        found = [w for w in wanted if self._fold(w) in text]
        missing = [w for w in wanted if w not in found]
        matched = not missing if self.all else bool(found)
        passed = matched != self.negate
        return Evaluation(score=1.0 if passed else 0.0, reason=_reason(found, missing, negate=self.negate))

    def _fold(self, text: str) -> str:
        return text.casefold() if self.ignore_case else text


def _reason(found: list[str], missing: list[str], *, negate: bool) -> str:
    """`contains 'Paris'; lacks 'France'`, with `negate` saying what was not wanted."""
    parts = [f"contains {_quoted(found)}"] if found else []
    parts += [f"lacks {_quoted(missing)}"] if missing else []
    return ("not wanted: " if negate else "") + "; ".join(parts)


def _quoted(texts: list[Any]) -> str:
    shown = ", ".join(repr(t if len(t) <= 40 else t[:39] + "…") for t in texts[:5])
    return shown + (f" and {len(texts) - 5} more" if len(texts) > 5 else "")
