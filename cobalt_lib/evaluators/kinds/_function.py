"""`function`: your own scoring function, sync or async."""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType
from typing import Any

from pydantic import Field

from .._context import EvalContext, Scoring
from .._kind import EvaluatorKind
from .._usercode import call_user


class Function(EvaluatorKind):
    """Your function `fn(ctx)` returns a float, bool, dict or EvalResult (sync or async)."""

    kind = "function"

    fn: Callable[[EvalContext], Any] = Field(description="a callable taking ctx, e.g. lambda ctx: ctx.output == 'ok'")

    @property
    def reads_spans(self) -> bool:
        """When its code names `spans` (`ctx.spans`), in its own body or a function defined in it."""
        return _names(getattr(self.fn, "__code__", None) or getattr(type(self.fn).__call__, "__code__", None),
                      "spans")

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Any:
        return await call_user(self.fn, ctx, scoring)


def _names(code: CodeType | None, name: str) -> bool:
    if code is None:
        return False
    return name in code.co_names or any(isinstance(c, CodeType) and _names(c, name) for c in code.co_consts)
