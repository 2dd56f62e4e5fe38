"""`equals_json`: 1 when the output, parsed as JSON, equals an item field's JSON (key order ignored)."""

from __future__ import annotations

from typing import Any

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Compared, NotJson, parse_json, quote, verdict


class EqualsJson(Compared):
    """1 when the output parsed as JSON equals item[`field`] parsed as JSON (key order ignored), else 0."""

    kind = "equals_json"

    def check(self, ctx: EvalContext) -> Evaluation:
        try:
            actual = parse_json(ctx.output)
            expected = parse_json(self.reference(ctx), f"item field {self.field!r}")
        except NotJson as exc:
            return verdict(False, str(exc))
        difference = first_difference(expected, actual, "$")
        return verdict(difference is None, difference or "equal JSON")


def first_difference(expected: Any, actual: Any, path: str) -> str | None:
    """Where two JSON values first differ (`at $.a[1]: expected 2, got 3`), None when equal.

    Strict about types: `1` and `true` differ, `1` and `1.0` do not (JSON has one number type)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected.keys() | actual.keys():
            if key not in actual:
                return f"at {path}: missing key {key!r}"
            if key not in expected:
                return f"at {path}: unexpected key {key!r}"
        for key in sorted(expected, key=str):
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"at {path}: expected {len(expected)} elements, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(e, a, f"{path}[{i}]")
            if found:
                return found
        return None
    if _kind(expected) != _kind(actual) or expected != actual:
        return f"at {path}: expected {quote(expected, 60)}, got {quote(actual, 60)}"
    return None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__
