"""How outputs are scored: `Evaluator` declarations and the registry of evaluator kinds.

Every kind is a class registered by name (`evaluator_kinds()`); the built-in ones live one per
module in `kinds/`, third-party ones come from the `cobalt.evaluators` entry point group.
"""

from __future__ import annotations

from ._catalog import EVALUATOR_TYPES, KindInfo, OptionInfo, broken_plugins, describe_kinds, evaluator_kinds, find_kind
from ._context import EvalContext, Scoring
from ._evaluator import Evaluator
from ._kind import EvaluatorKind, require_field
from ._plugins import PluginWarning
from ._values import to_evaluation

__all__ = [
    "EVALUATOR_TYPES",
    "EvalContext",
    "Evaluator",
    "EvaluatorKind",
    "KindInfo",
    "OptionInfo",
    "PluginWarning",
    "Scoring",
    "broken_plugins",
    "describe_kinds",
    "evaluator_kinds",
    "find_kind",
    "require_field",
    "to_evaluation",
]
