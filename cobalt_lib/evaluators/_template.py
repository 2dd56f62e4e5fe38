"""`{{variable}}` templates. A variable the context lacks is an error, never an empty string."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from .._errors import TemplateError

_VAR = re.compile(r"\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+)*)\s*\}\}")

#: Variables filled after the agent has run; everything else comes from the item.
RUNTIME_VARIABLES = frozenset({"output", "metadata", "item", "index", "run_index"})


def variables(template: str) -> list[str]:
    """The variable paths a template uses, in order of first appearance."""
    return list(_variables(template))


@functools.lru_cache(maxsize=256)
def _variables(template: str) -> tuple[str, ...]:
    # Cached: a run checks every item against its evaluators' templates before the first agent call.
    seen: dict[str, None] = {}
    for match in _VAR.finditer(template):
        seen.setdefault(match.group(1), None)
    return tuple(seen)


def missing_item_variables(template: str, item: Mapping[str, Any]) -> list[str]:
    """Variables that no item field (or runtime variable) can fill."""
    missing = []
    for path in variables(template):
        head, _, rest = path.partition(".")
        if head in RUNTIME_VARIABLES and head != "item":
            continue
        source: Any = item
        parts = rest.split(".") if head == "item" and rest else path.split(".")
        if head == "item" and not rest:
            continue
        if _lookup(source, parts) is _MISSING:
            missing.append(path)
    return missing


def render(template: str, context: Mapping[str, Any], *, where: str = "template") -> str:
    """Fill every `{{path}}` from `context`; dotted paths walk into dicts."""

    def fill(match: re.Match[str]) -> str:
        path = match.group(1)
        value = _lookup(context, path.split("."))
        if value is _MISSING:
            known = ", ".join(sorted(map(str, context))) or "none"
            raise TemplateError(
                f"{where} uses {{{{{path}}}}} but the item has no field {path!r} (available: {known})."
            )
        return _as_text(value)

    return _VAR.sub(fill, template)


_MISSING = object()


def _lookup(source: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(source, Mapping) and part in source:
            source = source[part]
        else:
            return _MISSING
    return source


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)
