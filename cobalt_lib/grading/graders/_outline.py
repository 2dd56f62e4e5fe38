"""A grader as numbered lines (spec paragraphs, card titles, card specs, context values) and edits by number.

The numbering is the order the rubric is rendered in: the grader's spec paragraphs, then each card
(its title, its specs, then its nested cards), then the context values. `cobalt grader show` and the
studio print it; `cobalt grader edit` and the studio's `edit`, `add`, `card` and `delete` take it.
Every edit returns a new grader (decks are immutable).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..._errors import ConfigError
from ._deck import Card, Context, Grader

Kind = Literal["spec", "card", "context"]
#: A card's place: indexes into `grader.cards`, then into each card's `cards`.
CardPath = tuple[int, ...]


@dataclass(frozen=True)
class Line:
    """One numbered line: `card` is the path of the card it belongs to (or is), () for the grader's own
    specs; `index` is the spec's (or context's) position in its list, None for a card title."""

    number: int
    kind: Kind
    depth: int
    text: str
    card: CardPath = ()
    index: int | None = None


def outline(grader: Grader) -> list[Line]:
    """Every line of the grader, numbered from 1."""
    rows: list[tuple[Kind, int, str, CardPath, int | None]] = [
        ("spec", 0, text, (), i) for i, text in enumerate(grader.specs)]

    def walk(cards: tuple[Card, ...], path: CardPath) -> None:
        for i, card in enumerate(cards):
            here = (*path, i)
            rows.append(("card", len(here) - 1, card.title, here, None))
            rows.extend(("spec", len(here), text, here, j) for j, text in enumerate(card.specs))
            walk(card.cards, here)

    walk(grader.cards, ())
    rows.extend(("context", 0, f"{c.name}: {_value_text(c)}", (), i) for i, c in enumerate(grader.contexts))
    return [Line(n, kind, depth, text, card, index) for n, (kind, depth, text, card, index) in enumerate(rows, 1)]


def line(grader: Grader, number: int) -> Line:
    """Line `number`, or a ConfigError saying which numbers there are."""
    lines = outline(grader)
    if not 1 <= number <= len(lines):
        raise ConfigError(f"Grader {grader.name!r} has lines 1 to {len(lines)}; there is no line {number} "
                          "(`cobalt grader show FILE` numbers them).")
    return lines[number - 1]


def editable_text(grader: Grader, number: int) -> str:
    """What `set_line` replaces: a spec's text, a card's title, a context's value."""
    found = line(grader, number)
    if found.kind == "context":
        assert found.index is not None
        return _value_text(grader.contexts[found.index])
    return found.text


def _value_text(context: Context) -> str:
    """A context value on one line: text as it is, anything else as compact JSON."""
    if isinstance(context.value, str):
        return context.value
    return json.dumps(context.value, ensure_ascii=False, sort_keys=True, default=str)


def _nonempty(text: str, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"The new {what} is empty; give its text (to remove the line, delete it).")
    return text.strip()


def _on_card(cards: tuple[Card, ...], path: CardPath, change: Any) -> tuple[Card, ...]:
    """`cards` with the card at `path` replaced by `change(card)` (a tuple of cards: none removes it)."""
    head, rest = path[0], path[1:]
    card = cards[head]
    new: tuple[Card, ...] = change(card) if not rest else (replace(card, cards=_on_card(card.cards, rest, change)),)
    return (*cards[:head], *new, *cards[head + 1:])


def _with_specs(grader: Grader, path: CardPath, change: Any) -> Grader:
    """The grader with the spec list at `path` (() the grader's own) replaced by `change(specs)`."""
    if not path:
        return replace(grader, specs=change(grader.specs))
    return replace(grader, cards=_on_card(grader.cards, path, lambda c: (replace(c, specs=change(c.specs)),)))


def set_line(grader: Grader, number: int, text: str) -> Grader:
    """Line `number` rewritten: a spec's text, a card's title, or a context's value (JSON stays JSON)."""
    found = line(grader, number)
    if found.kind == "card":
        title = _nonempty(text, "card title")
        return replace(grader, cards=_on_card(grader.cards, found.card, lambda c: (replace(c, title=title),)))
    if found.kind == "context":
        assert found.index is not None
        old = grader.contexts[found.index]
        value = _context_value(old, text)
        contexts = (*grader.contexts[:found.index], Context(old.name, value), *grader.contexts[found.index + 1:])
        return replace(grader, contexts=contexts)
    new = _nonempty(text, "spec")
    index = found.index
    assert index is not None
    return _with_specs(grader, found.card, lambda specs: (*specs[:index], new, *specs[index + 1:]))


def _context_value(old: Context, text: str) -> Any:
    if isinstance(old.value, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        raise ConfigError(f"Context {old.name!r} holds JSON; the new value is not valid JSON: {text[:80]!r}.") from None


def add_spec(grader: Grader, number: int, text: str) -> Grader:
    """A new spec line after line `number` (after a card's title: its first spec)."""
    found = line(grader, number)
    new = _nonempty(text, "spec")
    if found.kind == "context":
        raise ConfigError(f"Line {number} is a context value; add a spec after a spec or a card title.")
    at = 0 if found.index is None else found.index + 1
    return _with_specs(grader, found.card, lambda specs: (*specs[:at], new, *specs[at:]))


def add_card(grader: Grader, number: int, title: str, spec: str | None = None) -> Grader:
    """A new card (with one spec when given) beside the card line `number` belongs to, after it; after one
    of the grader's own specs or contexts, the first card."""
    found = line(grader, number)
    card = Card(_nonempty(title, "card title"))
    if spec is not None:
        card = card.spec(_nonempty(spec, "spec"))
    if not found.card:
        return replace(grader, cards=(card, *grader.cards))
    parent, position = found.card[:-1], found.card[-1] + 1
    if not parent:
        return replace(grader, cards=(*grader.cards[:position], card, *grader.cards[position:]))
    return replace(grader, cards=_on_card(grader.cards, parent, lambda c: (
        replace(c, cards=(*c.cards[:position], card, *c.cards[position:])),)))


def delete_line(grader: Grader, number: int) -> Grader:
    """Line `number` removed (a card with everything in it)."""
    found = line(grader, number)
    if found.kind == "context":
        assert found.index is not None
        changed = replace(grader, contexts=grader.contexts[:found.index] + grader.contexts[found.index + 1:])
    elif found.kind == "card":
        changed = replace(grader, cards=_on_card(grader.cards, found.card, lambda c: ()))
    else:
        index = found.index
        assert index is not None
        changed = _with_specs(grader, found.card, lambda specs: specs[:index] + specs[index + 1:])
    if not changed.specs and not changed.cards:
        raise ConfigError(f"Line {number} is the grader's last criterion; a grader needs a spec or a card.")
    return changed
