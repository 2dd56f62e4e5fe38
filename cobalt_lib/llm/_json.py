"""JSON as the standard has it: Python's `json` accepts `NaN`, `Infinity` and `-Infinity`, which no JSON
parser elsewhere does (RFC 8259 has no such values). A model or agent answering `{"score": NaN}` has not
answered JSON, and a check must not read it as a number that passes every `maximum`."""

from __future__ import annotations

import json
import math
from typing import Any


class NonFiniteJson(ValueError):
    """A JSON text, or a structured value, holding NaN or an infinity."""


def _refuse(name: str) -> Any:
    raise NonFiniteJson(f"{name} is not a JSON value (JSON has no NaN or Infinity)")


#: One decoder for every call: `json.loads` with an argument builds a new one each time (a trace's reading
#: parses a few attributes, 10,000 traces a second at `cobalt collect`'s goal).
_STRICT = json.JSONDecoder(parse_constant=_refuse)


def loads_strict(text: str | bytes | bytearray) -> Any:
    """`json.loads`, refusing NaN and Infinity: json.JSONDecodeError for broken JSON, NonFiniteJson for those."""
    if isinstance(text, str):
        if text.startswith("\ufeff"):  # json.loads refuses a BOM, saying so; the decoder alone would not
            return json.loads(text, parse_constant=_refuse)
        return _STRICT.decode(text)
    return json.loads(text, parse_constant=_refuse)


def non_finite(value: Any) -> tuple[str, float] | None:
    """Where a structured value holds NaN or an infinity (`$.score`) and which, or None when it holds none."""
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, current = stack.pop()
        if isinstance(current, float) and not math.isfinite(current):
            return path, current
        if isinstance(current, dict):
            stack.extend((f"{path}.{k}", v) for k, v in current.items())
        elif isinstance(current, list | tuple):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(current))
    return None
