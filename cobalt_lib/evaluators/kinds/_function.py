"""`function`: your own scoring function, sync or async."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from .._context import EvalContext, Scoring
from .._kind import EvaluatorKind
from .._usercode import call_user


class Function(EvaluatorKind):
    """Your function `fn(ctx)` returns a float, bool, dict or EvalResult (sync or async)."""

    kind = "function"

    fn: Callable[[EvalContext], Any] = Field(description="a callable taking ctx, e.g. lambda ctx: ctx.output == 'ok'")

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Any:
        return await call_user(self.fn, ctx, scoring)
