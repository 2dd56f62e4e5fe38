"""`bleu`: sentence BLEU of the output against an item field (or several references), through sacreBLEU."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..._numbers import fixed
from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Compared, as_text


class Bleu(Compared):
    """Sentence BLEU (sacreBLEU, exponential smoothing) of the output against item[`field`], scaled to 0..1."""

    kind = "bleu"

    tokenize: Literal["13a", "intl", "zh", "char", "none"] = Field(
        "13a", description="sacreBLEU's tokenizer: 13a (default, Western text), intl, zh (Chinese), char, none")
    lowercase: bool = Field(False, description="compare lower-cased text")

    def check(self, ctx: EvalContext) -> Evaluation:
        from sacrebleu.metrics import BLEU

        references = self.references(ctx)
        if isinstance(references, Evaluation):
            return references
        bleu = BLEU(tokenize=self.tokenize, lowercase=self.lowercase, effective_order=True)
        result = bleu.sentence_score(as_text(ctx.output), references)
        precisions = ", ".join(fixed(p, 1) for p in result.precisions)
        return Evaluation(score=min(1.0, result.score / 100.0), raw_score=result.score,
                          reason=f"BLEU {fixed(result.score, 1)} (n-gram precisions {precisions}; brevity penalty "
                                 f"{fixed(result.bp, 3)})")
