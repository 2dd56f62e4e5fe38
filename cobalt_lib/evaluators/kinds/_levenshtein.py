"""`levenshtein`: normalised edit-distance similarity between the output and an item field."""

from __future__ import annotations

from pydantic import Field

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Compared, as_text


class Levenshtein(Compared):
    """1 - edit distance / length of the longer text, between the output and item[`field`] (RapidFuzz)."""

    kind = "levenshtein"

    ignore_case: bool = Field(False, description="compare case-insensitively (Unicode casefold)")

    def check(self, ctx: EvalContext) -> Evaluation:
        from rapidfuzz.distance import Levenshtein as distance

        actual, expected = as_text(ctx.output), as_text(self.reference(ctx))
        if self.ignore_case:
            actual, expected = actual.casefold(), expected.casefold()
        edits = distance.distance(actual, expected)
        longest = max(len(actual), len(expected))
        similarity = 1.0 - edits / longest if longest else 1.0
        return Evaluation(score=similarity, raw_score=float(edits),
                          reason=f"{edits} edit{'s' if edits != 1 else ''} over {longest} characters")
