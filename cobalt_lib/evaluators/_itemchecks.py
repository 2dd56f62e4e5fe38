"""Checks carried by dataset items: `"checks": [{"type": "contains", "value": "Paris"}, ...]`.

Each check is an evaluator declaration (`type` plus that kind's options, optionally `threshold` and
`name`) that runs on its own item only; the results are reported under one `checks` evaluator.
Declared here so that dataset loading (naming the file and line) and the `checks` kind (naming the
dataset item) validate them the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import EvaluatorError
from ._catalog import find_kind

if TYPE_CHECKING:
    from ._evaluator import Evaluator
    from ._kind import EvaluatorKind

#: The item field holding the checks, and the name of the evaluator that reports them.
CHECKS = "checks"
_OWN_KEYS = ("type", "threshold", "name")


@dataclass(frozen=True)
class ItemCheck:
    """One declared check: its label in reasons, its kind with options, its pass mark and a stable key."""

    label: str
    kind: EvaluatorKind
    threshold: float
    key: str


def declare_checks(value: Any, where: str) -> list[ItemCheck]:
    """The checks of one item, or one EvaluatorError naming `where` (a file and line, or an item)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise EvaluatorError(f"{where}: the checks are not valid JSON ({exc.msg} at column {exc.colno}); "
                                 'write a JSON list such as [{"type": "contains", "value": "Paris"}].') from None
    if not isinstance(value, list):
        raise EvaluatorError(f"{where}: 'checks' must be a list of checks such as "
                             f'[{{"type": "contains", "value": "Paris"}}], got {type(value).__name__}.')
    return [_declare(check, f"{where}: check {i + 1}") for i, check in enumerate(value)]


def _declare(check: Any, where: str) -> ItemCheck:
    if not isinstance(check, Mapping) or "type" not in check:
        raise EvaluatorError(f"{where} must be an object with a 'type', such as "
                             f'{{"type": "regex", "pattern": "\\\\d+"}}; got {str(check)[:80]}.')
    if check["type"] == CHECKS:
        raise EvaluatorError(f"{where} has type 'checks', which reports the item's checks; name a check kind.")
    cls = find_kind(check["type"], where)
    kind = cls.declare(where, {k: v for k, v in check.items() if k not in _OWN_KEYS})
    threshold = check.get("threshold", cls.default_threshold)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise EvaluatorError(f"{where}: threshold={threshold!r} must be a number within 0..1.")
    label = str(check.get("name") or check["type"])
    key = json.dumps(dict(check), sort_keys=True, default=repr)
    return ItemCheck(label=label, kind=kind, threshold=float(threshold), key=key)


def carries_checks(items: Iterable[Mapping[str, Any]]) -> bool:
    return any(item.get(CHECKS) not in (None, [], "") for item in items)


def with_item_checks(evaluators: Sequence[Evaluator], items: Iterable[Mapping[str, Any]]) -> list[Evaluator]:
    """`evaluators`, plus the `checks` evaluator when an item carries checks and none is declared (declare
    `Evaluator("checks", type="checks", threshold=...)` yourself to set its pass mark)."""
    from ._evaluator import Evaluator

    evaluators = list(evaluators)
    taken = next((e for e in evaluators if e.name == CHECKS), None)
    if not carries_checks(items):
        return evaluators
    if taken is not None and taken.type != CHECKS:
        raise EvaluatorError(f"The dataset's items carry checks, reported by an evaluator named {CHECKS!r}, but "
                             f"evaluator {CHECKS!r} has type {taken.type!r}; rename it.")
    return evaluators if taken is not None else [*evaluators, Evaluator(CHECKS, type=CHECKS)]
