"""`similarity`: cosine similarity of the output's and an item field's embeddings."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from pydantic import Field, model_validator

from ..._numbers import fixed
from ...llm._pricing import cost_usd
from ...llm._providers import Endpoint, resolve_embeddings
from ...results._report import Evaluation
from .._context import EvalContext, Scoring
from .._kind import EvaluatorKind, require_field
from .._local_embeddings import LOCAL, embed_locally, local_endpoint

if TYPE_CHECKING:
    from ...config._config import Config
    from .._evaluator import Evaluator


class Similarity(EvaluatorKind):
    """Cosine similarity of output and item[`field`] embeddings; 1 at or above `threshold`."""

    kind = "similarity"
    default_threshold = 0.85

    field: str = Field("expected_output", description="the item field holding the reference text")
    model: str | None = Field(None, description="the embeddings model (default: [embeddings] model)")
    provider: str | None = Field(None, description="the embeddings provider (default: [embeddings], else [judge]); "
                                                   "'local': a sentence-transformers model on disk (extra [local])")
    base_url: str | None = Field(None, exclude=True, description="an OpenAI-compatible embeddings server")

    @model_validator(mode="after")
    def _local_needs_a_model(self) -> Self:
        if self.provider == LOCAL and not self.model:
            raise ValueError("provider='local' needs model=: the directory of a sentence-transformers model on disk "
                             "(or its name in the local Hugging Face cache)")
        return self

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_field(item, index, evaluator, self.field)

    def endpoint(self, config: Config, evaluator: Evaluator) -> Endpoint:
        if self.provider == LOCAL and self.model:
            return local_endpoint(self.model, f"Evaluator {evaluator.name!r}")
        embeddings = config.embeddings
        if self.provider or self.base_url:
            embeddings = embeddings.model_copy(update={"provider": self.provider or embeddings.provider,
                                                       "base_url": self.base_url or embeddings.base_url})
        return resolve_embeddings(config.judge, embeddings, model=self.model, who=f"Evaluator {evaluator.name!r}")

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        judge, endpoint = scoring.judge, scoring.endpoint
        assert judge is not None and endpoint is not None
        references = _references(ctx.item.get(self.field))
        if not references:
            return Evaluation(status="eval-error", error=f"item field {self.field!r} is an empty list of "
                                                         "references; give at least one reference text")
        texts = [_as_text(ctx.output), *references]
        embedded = await (embed_locally(judge, endpoint, texts) if endpoint.provider == LOCAL
                          else judge.embed(endpoint, texts))
        # Several references, as bleu and rouge take them: the output is as close as its nearest one.
        cosines = [_cosine(embedded.vectors[0], vector) for vector in embedded.vectors[1:]]
        best = max(range(len(cosines)), key=cosines.__getitem__)
        cosine = cosines[best]
        score = 1.0 if cosine >= scoring.threshold else max(0.0, cosine)
        nearest = f" (nearest of {len(cosines)} references: #{best + 1})" if len(cosines) > 1 else ""
        return Evaluation(score=score, raw_score=cosine, reason=f"cosine similarity {fixed(cosine, 3)}{nearest}",
                          judge_model=endpoint.label, input_tokens=embedded.tokens, judge_calls=embedded.calls,
                          cached=embedded.cached, cost_usd=cost_usd(endpoint.model, embedded.tokens, 0, judge.prices))


def _references(value: Any) -> list[str]:
    """item[`field`] as one reference text, or a list of several (never the list's JSON as one text)."""
    return [_as_text(v) for v in value] if isinstance(value, list) else [_as_text(value)]


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0
