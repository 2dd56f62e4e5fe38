"""What a dataset item read from a file must be for cobalt to hash, store and report it: nested no
deeper than `MAX_DEPTH` (pydantic's JSON serialiser stops at about 250 levels, inside a report) and
every string valid Unicode (JSON can escape a lone surrogate, `"\\ud800"`, which UTF-8 cannot hold)."""

from __future__ import annotations

from typing import Any

from .._errors import DatasetError

#: The deepest nesting of lists and objects an item may have.
MAX_DEPTH = 200


def check_item(item: Any, where: str) -> None:
    """Raise DatasetError naming `where` (the file and line) when the item is nested too deeply or holds
    a string that is not valid Unicode. Walks the item without recursion."""
    stack: list[tuple[Any, int, str]] = [(item, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            if not value.isascii():
                _check_text(value, where, path)
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise DatasetError(f"{where}: field {path} is nested more than {MAX_DEPTH} levels deep, more than cobalt "
                               "can store; flatten it, or give the deep part as a JSON string.")
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, inner in pairs:
            if isinstance(key, str) and not key.isascii():
                _check_text(key, where, path)
            stack.append((inner, depth + 1, path or str(key)))  # the top-level field is what a user finds


def _check_text(text: str, where: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise DatasetError(f"{where}: field {path or 'name ' + repr(text)} holds a lone surrogate ({bad!r}), which is "
                           "not valid Unicode; fix or remove that \\u escape.") from None
