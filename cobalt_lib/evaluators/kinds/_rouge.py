"""`rouge`: ROUGE F-measure of the output against an item field, through Google's `rouge-score`."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from ..._numbers import score
from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Compared, as_text

_WORDS = re.compile(r"\w+")


class _UnicodeWords:
    """rouge-score's default tokenizer keeps only ASCII letters and digits: "café" would lose a letter
    and a Japanese answer every word. This one keeps every Unicode word, case-folded."""

    def tokenize(self, text: str) -> list[str]:
        return _WORDS.findall(text.casefold())


class Rouge(Compared):
    """ROUGE F-measure (`variant` rouge1, rouge2, rougeL or rougeLsum) of the output against item[`field`]."""

    kind = "rouge"

    variant: Literal["rouge1", "rouge2", "rougeL", "rougeLsum"] = Field(
        "rougeL", description="rouge1 / rouge2: unigram / bigram overlap; rougeL: longest common subsequence; "
                              "rougeLsum: rougeL per line")

    def check(self, ctx: EvalContext) -> Evaluation:
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer([self.variant], tokenizer=_UnicodeWords())
        references = self.references(ctx)
        if isinstance(references, Evaluation):
            return references
        scores = [scorer.score(reference, as_text(ctx.output))[self.variant] for reference in references]
        best = max(scores, key=lambda s: s.fmeasure)
        return Evaluation(score=float(best.fmeasure), reason=(
            f"{self.variant} F {score(best.fmeasure)} (precision {score(best.precision)}, "
            f"recall {score(best.recall)})"))

