"""`contains`: 1 when the output contains a text (or any, or all, of several texts)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field, model_validator

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, as_text, verdict


class Contains(Deterministic):
    """1 when the output contains `value` (or any of `values`; all of them with `all=True`), else 0."""

    kind = "contains"

    value: str | None = Field(None, description="the text the output must contain")
    values: list[str] | None = Field(None, description="several texts: any of them passes (all of them with all)")
    all: bool = Field(False, description="with values: every one of them must appear")
    ignore_case: bool = Field(False, description="compare case-insensitively (Unicode casefold)")

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.value is None) == (self.values is None):
            raise ValueError("give value='...' or values=[...], exactly one of them")
        if self.values is not None and not self.values:
            raise ValueError("values=[] is empty; list at least one text")
        if self.all and self.values is None:
            raise ValueError("all=True applies to values=[...]; with one value, drop it")
        return self

    def check(self, ctx: EvalContext) -> Evaluation:
        wanted = [self.value] if self.value is not None else list(self.values or [])
        text = self._fold(as_text(ctx.output))
        found = [w for w in wanted if self._fold(w) in text]
        missing = [w for w in wanted if w not in found]
        return verdict(not missing if self.all else bool(found), _reason(found, missing))

    def _fold(self, text: str) -> str:
        return text.casefold() if self.ignore_case else text


def _reason(found: list[str], missing: list[str]) -> str:
    """`contains 'Paris'; lacks 'France'`."""
    parts = [f"contains {_quoted(found)}"] if found else []
    parts += [f"lacks {_quoted(missing)}"] if missing else []
    return "; ".join(parts)


def _quoted(texts: list[Any]) -> str:
    shown = ", ".join(repr(t if len(t) <= 40 else t[:39] + "…") for t in texts[:5])
    return shown + (f" and {len(texts) - 5} more" if len(texts) > 5 else "")
