"""What the deterministic kinds share: `negate`, the compared item field, the output read as text or
as JSON, and short quotes of values for reasons."""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from .._numbers import distinct
from ..llm._json import NonFiniteJson, loads_strict, non_finite
from ..results._report import Evaluation
from ._context import EvalContext, Scoring
from ._kind import EvaluatorKind, require_field

if TYPE_CHECKING:
    from ._evaluator import Evaluator


class Deterministic(EvaluatorKind):
    """Base of the kinds that call no model. `negate=True` scores `1 - score` (promptfoo's `not-`)."""

    negate: bool = Field(False, description="invert the score: 1 - score (a match becomes a failure)")

    def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        result = self.check(ctx)
        if not self.negate or result.status != "ok" or result.score is None:
            return result
        return result.model_copy(update={"score": 1.0 - result.score, "reason": f"not wanted: {result.reason}"})

    @abc.abstractmethod
    def check(self, ctx: EvalContext) -> Evaluation:
        """The score before `negate`: an `Evaluation` with a score in 0..1 and a reason."""


class Compared(Deterministic):
    """Base of the deterministic kinds that compare the output with an item field."""

    field: str = Field("expected_output", description="the item field holding the reference")

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        require_field(item, index, evaluator, self.field)

    def reference(self, ctx: EvalContext) -> Any:
        return ctx.item.get(self.field)

    def references(self, ctx: EvalContext) -> list[str] | Evaluation:
        """The reference texts: item[`field`] as one, or a list of several; an empty list is the item's
        eval-error (there is nothing to score against), never the text "[]"."""
        value = self.reference(ctx)
        if not isinstance(value, list):
            return [as_text(value)]
        if not value:
            return Evaluation(status="eval-error", error=f"item field {self.field!r} is an empty list of "
                                                         "references; give at least one reference text")
        return [as_text(v) for v in value]


def verdict(passed: bool, reason: str) -> Evaluation:
    """A pass/fail score: 1.0 or 0.0 with its reason."""
    return Evaluation(score=1.0 if passed else 0.0, reason=reason)


def as_text(value: Any) -> str:
    """A string as it is, None as "", anything else as JSON (non-ASCII kept)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


class NotJson(ValueError):
    """A value that should hold JSON does not; the message says where it breaks."""


def parse_json(value: Any, what: str = "the output") -> Any:
    """A JSON text parsed, or a structured value (dict, list, number, bool, None) as it is; NaN and Infinity,
    which Python's json reads but JSON has not, are NotJson in either."""
    if isinstance(value, bytes | bytearray):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        found = non_finite(value)
        if found is not None:
            raise NotJson(f"{what} holds {found[1]!r} at {found[0]}, which JSON cannot hold "
                          "(JSON has no NaN or Infinity)")
        return value
    try:
        return loads_strict(value)
    except json.JSONDecodeError as exc:
        raise NotJson(f"{what} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except NonFiniteJson as exc:
        raise NotJson(f"{what} is not valid JSON ({exc})") from None


def quote(value: Any, limit: int = 80) -> str:
    """A repr cut to `limit` characters, for reasons."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def over_budget(name: str, actual: float | None, limit: float, unit: str, unknown: str) -> Evaluation:
    """The budget kinds' score: 1 at or under `limit`, else 0; an unknown metric is an eval-error."""
    if actual is None:
        return Evaluation(status="eval-error", error=f"the item's {name} is unknown: {unknown}")
    shown, bound = _distinct(actual, limit)
    if actual <= limit:
        return verdict(True, f"{name} {shown}{unit} within {bound}{unit}")
    return verdict(False, f"{name} {shown}{unit} over {bound}{unit}")


def _distinct(actual: float, limit: float) -> tuple[str, str]:
    """Both numbers in the fewest significant digits (6 at least) that tell them apart when they differ:
    1000.0004 over 1000 never reads "1000 over 1000"."""
    return distinct(actual, limit)
