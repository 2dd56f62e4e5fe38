"""A grader written back as the Python file a person would write with the builder.

The studio keeps each version of a grader in such a file, `cobalt grader draft` writes one, and
`cobalt grader export` copies one out: loading it gives a grader with the same content hash.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

from ..._errors import ConfigError
from ._deck import Card, Grader

_INDENT = "    "


def _literal(value: Any, what: str) -> str:
    """`value` as a Python literal that evaluates back to it."""
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise ConfigError(f"{what} holds a {type(value).__name__} that cannot be written as a literal; keep "
                          "context values to text, numbers, lists and dicts.")
    return text


def _card(card: Card, depth: int) -> str:
    pad = _INDENT * (depth + 2)
    calls = [f"\n{pad}.spec({_literal(text, 'a spec')})" for text in card.specs]
    calls += [f"\n{pad}{_card(child, depth + 1)}" for child in card.cards]
    return f".card({_literal(card.title, 'a card title')}, lambda c: c{''.join(calls)})"


def grader_source(grader: Grader) -> str:
    """The module text: `grader = grader(name).spec(...).card(...).context(...)`."""
    lines = [f"grader({_literal(grader.name, 'the name')})"]
    lines += [f".spec({_literal(text, 'a spec')})" for text in grader.specs]
    lines += [_card(card, 0) for card in grader.cards]
    lines += [f".context({_literal(c.name, 'a context name')}, {_literal(c.value, f'context {c.name!r}')})"
              for c in grader.contexts]
    body = f"\n{_INDENT}".join(lines)
    return (f"# Grader {grader.name!r}: edit its spec and cards, then `cobalt grade` it against labelled samples.\n\n"
            f"from cobalt_lib import grader\n\ngrader = (\n{_INDENT}{body}\n)\n")


def deck_payload(grader: Grader) -> dict[str, Any]:
    """The grader's content as JSON (name, specs, cards, context), stored with each grading run so that any
    version graded can be rebuilt, whatever became of its file."""
    return {"name": grader.name, "specs": list(grader.specs), "cards": [c.payload() for c in grader.cards],
            "context": [[c.name, c.value] for c in grader.contexts]}


def _card_from(payload: dict[str, Any]) -> Card:
    card = Card(payload["title"], specs=tuple(payload.get("specs", ())))
    return replace(card, cards=tuple(_card_from(child) for child in payload.get("cards", ())))


def deck_from_payload(payload: dict[str, Any]) -> Grader:
    """The grader `deck_payload` described."""
    built = Grader(payload["name"], specs=tuple(payload.get("specs", ())),
                   cards=tuple(_card_from(c) for c in payload.get("cards", ())))
    for name, value in payload.get("context", ()):
        built = built.context(name, value)
    return built
