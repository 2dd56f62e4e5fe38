"""`checks`: the checks each dataset item carries, run on that item; the share that pass."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import PrivateAttr

from ..._numbers import score
from ...results._report import Evaluation
from .._context import EvalContext, Scoring
from .._itemchecks import CHECKS, ItemCheck, declare_checks
from .._kind import EvaluatorKind

if TYPE_CHECKING:
    from ...config._config import Config
    from ...llm._providers import Endpoint
    from .._evaluator import Evaluator


class ItemChecks(EvaluatorKind):
    """The share of the item's own `checks` that pass (1 for an item without any); the reason names the
    failed ones. Added by itself when dataset items carry checks."""

    kind = "checks"
    default_threshold = 1.0

    #: The checks that call a model, by key: their endpoints are resolved with the run's config.
    _judged: dict[str, ItemCheck] = PrivateAttr(default_factory=dict)
    _endpoints: dict[str, Endpoint | None] = PrivateAttr(default_factory=dict)

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        for check in declare_checks(item.get(CHECKS) or [], f"Dataset item {index}"):
            if type(check.kind).endpoint is not EvaluatorKind.endpoint:
                self._judged.setdefault(check.key, check)

    def endpoint(self, config: Config, evaluator: Evaluator) -> Endpoint | None:
        """Resolves the endpoints of the model-judged checks seen by `check_item`, which the run calls first
        for every item: a missing API key fails the run before any agent call."""
        for key, check in self._judged.items():
            self._endpoints[key] = check.kind.endpoint(config, evaluator)
        return next((e for e in self._endpoints.values() if e is not None), None)

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        checks = declare_checks(ctx.item.get(CHECKS) or [], f"Dataset item {ctx.index}")
        if not checks:
            return Evaluation(score=1.0, reason="no checks on this item")
        results = await asyncio.gather(*(self._run(check, ctx, scoring) for check in checks))
        failed = [f"{c.label} #{i}: {_why(r)}" for i, (c, r) in enumerate(zip(checks, results, strict=True), start=1)
                  if not r.passed]
        passed = len(checks) - len(failed)
        reason = f"{passed}/{len(checks)} checks passed" + (f"; failed: {'; '.join(failed)}" if failed else "")
        costs = [r.cost_usd for r in results if r.cost_usd is not None]
        return Evaluation(score=passed / len(checks), reason=reason,
                          input_tokens=sum(r.input_tokens for r in results),
                          output_tokens=sum(r.output_tokens for r in results),
                          judge_calls=sum(r.judge_calls for r in results), cost_usd=sum(costs) if costs else None,
                          judge_model=next((r.judge_model for r in results if r.judge_model), None))

    async def _run(self, check: ItemCheck, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        if check.key in self._judged and self._endpoints.get(check.key) is None:
            return Evaluation(status="eval-error", error="its judge endpoint was not resolved before the run")
        own = Scoring(evaluator=f"{scoring.evaluator}.{check.label}", threshold=check.threshold,
                      judge=scoring.judge, endpoint=self._endpoints.get(check.key), threads=scoring.threads,
                      timeout=scoring.timeout)
        return await check.kind.evaluate(ctx, own)


def _why(result: Evaluation) -> str:
    if result.status != "ok":
        return f"eval-error: {result.error}"
    return f"{result.reason or 'failed'} (score {score(result.score)})" if result.score not in (0.0, None) else (
        result.reason or "failed")
