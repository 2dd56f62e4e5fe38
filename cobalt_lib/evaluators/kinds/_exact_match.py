"""`exact-match`: 1 when the output equals an item field, else 0."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Compared, as_text, verdict


class ExactMatch(Compared):
    """1 when the output equals item[`field`] (text compared as written, or normalised; any other value as
    its JSON text, so True equals "true"), else 0."""

    kind = "exact-match"

    ignore_case: bool = Field(False, description="compare case-insensitively (Unicode casefold)")
    ignore_whitespace: bool = Field(False, description="collapse runs of whitespace and strip both ends")

    def check(self, ctx: EvalContext) -> Evaluation:
        expected, actual = self._normalise(self.reference(ctx)), self._normalise(ctx.output)
        matched = expected == actual
        return verdict(matched, "exact match" if matched else f"expected {expected[:80]!r}, got {actual[:80]!r}")

    def _normalise(self, value: Any) -> str:
        text = as_text(value)
        if self.ignore_whitespace:
            text = re.sub(r"\s+", " ", text).strip()
        return text.casefold() if self.ignore_case else text
