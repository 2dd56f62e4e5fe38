"""`numeric_match`: the number in the output against an item field's, within a tolerance."""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

from pydantic import Field

from ..._numbers import threshold
from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Compared, as_text, quote, verdict

# A number with optional sign, thousands groups (comma, no-break or thin space, apostrophe, underscore;
# not a plain space, which also separates two numbers) and decimals: "1,234.50", "-3", "2.5e3". A sign
# right after a letter or digit is a hyphen, not a minus: "pages 10-20", "2024-01-02", "555-1234", "COVID-19".
_SIGN = r"(?:(?<![\w.])[-+−])?"
_NUMBER = re.compile(_SIGN + r"(?:\d{1,3}(?:[,'_\u00a0\u202f\u2009]\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|"
                     + _SIGN + r"\.\d+")
_SEPARATORS = re.compile(r"[,'_\u00a0\u202f\u2009]")


def parse_number(value: Any) -> float | None:
    """The number a value holds: a number as is; in text, currency signs and thousands separators are
    stripped and the last number is taken ("so the total is $1,234.50" -> 1234.5)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = "".join(ch for ch in as_text(value) if unicodedata.category(ch) != "Sc")
    found = _NUMBER.findall(text)
    if not found:
        return None
    number = _SEPARATORS.sub("", found[-1]).replace("−", "-")
    try:
        return float(number)
    except ValueError:
        return None


class NumericMatch(Compared):
    """1 when the number in the output equals item[`field`]'s within `tolerance`, else 0."""

    kind = "numeric_match"

    tolerance: float = Field(0.0, ge=0.0, description="the largest absolute difference that still matches")

    def check(self, ctx: EvalContext) -> Evaluation:
        expected, actual = parse_number(self.reference(ctx)), parse_number(ctx.output)
        if expected is None:
            return verdict(False, f"item field {self.field!r} holds no number: {quote(self.reference(ctx), 60)}")
        if actual is None:
            return verdict(False, f"the output holds no number: {quote(ctx.output, 60)}")
        matched = math.isclose(actual, expected, rel_tol=1e-9, abs_tol=self.tolerance)
        if matched:
            return verdict(True, f"{threshold(actual)} matches {threshold(expected)}")
        within = f" within {threshold(self.tolerance)}" if self.tolerance else ""
        return verdict(False, f"{threshold(actual)} differs from {threshold(expected)}{within} "
                              f"(by {threshold(abs(actual - expected))})")
