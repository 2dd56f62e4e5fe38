"""`starts_with`: 1 when the output starts with a text."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, as_text, quote, verdict


class StartsWith(Deterministic):
    """1 when the output starts with `value` (leading whitespace ignored with `strip`), else 0."""

    kind = "starts_with"

    value: str = Field(description="the text the output must start with")
    ignore_case: bool = Field(False, description="compare case-insensitively (Unicode casefold)")
    strip: bool = Field(True, description="ignore whitespace before the output's first character")

    def check(self, ctx: EvalContext) -> Evaluation:
        text = as_text(ctx.output)
        text = text.lstrip() if self.strip else text
        head, value = (text.casefold(), self.value.casefold()) if self.ignore_case else (text, self.value)
        if head.startswith(value):
            return verdict(True, f"starts with {quote(self.value)}")
        return verdict(False, f"starts with {quote(text[: max(len(self.value), 1) + 10])}, not {quote(self.value)}")
