"""How outputs are scored: the `Evaluator` declaration and its kinds."""

from __future__ import annotations

from ._evaluator import EVALUATOR_TYPES, EvalContext, Evaluator

__all__ = ["EVALUATOR_TYPES", "EvalContext", "Evaluator"]
